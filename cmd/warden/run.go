package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/loop"
)

const runUsage = `usage: warden run [--json] [--native | --plugins DIR] [--cache-dir DIR] [--model openai --base-url URL --api-key-env VAR --model-name NAME [model flags]] FILE...

Runs scenario files (docs/SCENARIOS.md) and checks their expectations.
A readable trace by default; --json prints one JSON event per line. The
trace starts with one line per first-party plugin: its generation and
digest as wasm, or that it runs native. A task scenario's trace ends with
its task graph, one node a line (--json: one {"kind":"GRAPH","graph":[…]}
line).

The first-party guards and builtins run as wasm: the modules embedded in
the binary (make build), else built once from the source tree with the Go
toolchain into the cache. Plugin flags:

  --plugins DIR                  the first-party modules (argpolicy.wasm … env.wasm) from DIR
  --native                       run them in-process instead, for debugging and benchmarks
  --wasm                         run them as wasm (the default; kept for old scripts)
  --cache-dir DIR                built plugins and compiled code (default $WARDEN_CACHE_DIR,
                                 else warden/ in the user cache directory)

With --model openai a real OpenAI-compatible model plays instead of the
scripted turns (expectations are then not checked). Model flags:

  --model-attempt-timeout D      bound on one HTTP attempt (default 1m)
  --model-call-timeout D         bound on one model turn, retries and waits included (default 3m)
  --model-max-retries N          retries of a 429, 5xx, timeout or network failure, 0 to 10 (default 3)
  --model-backoff D              wait before the first retry, doubled per retry (default 1s)
  --model-max-backoff D          longest wait between retries (default 30s)
  --model-stream                 ask for the reply as server-sent events
  --model-strict=BOOL            send tools with "strict": true where the schema allows (default true)
  --model-parallel-tool-calls=BOOL  send parallel_tool_calls (default: the provider's)
  --model-tool-choice MODE       auto, none or required (default: the provider's)

Exit 0 when every scenario passes (or ran, with a real model); 1 when an
expectation fails or a run stopped on an error (cancelled, a request
refused before it was sent, a loop or store failure: the error is
printed); 2 on usage or file errors; 3 when the model provider
failed (authentication, rate limit, context
length, unavailable, timeout, malformed reply): the provider's message and
the kind of failure are printed; 4 when the provider's quota or credit is
exhausted (insufficient_quota: a retry cannot help until it is refilled).
The highest code applies.
`

// cmdRun runs scenario files.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage) }
	asJSON := fs.Bool("json", false, "print one JSON trace event per line")
	native := fs.Bool("native", false, "run the first-party guards and builtins in-process")
	wasm := fs.Bool("wasm", false, "run the first-party guards and builtins as wasm (the default)")
	pluginDir := fs.String("plugins", "", "the first-party wasm modules from this directory")
	cacheDir := fs.String("cache-dir", os.Getenv(cacheEnv), "built plugins and compiled code")
	modelKind := fs.String("model", "", `"openai" runs a real OpenAI-compatible model instead of the scripted turns`)
	baseURL := fs.String("base-url", "", "the model's base URL (with --model openai)")
	keyEnv := fs.String("api-key-env", "", "the environment variable holding the API key (with --model openai)")
	modelName := fs.String("model-name", "", "the model name (with --model openai)")
	mk := defaultModelKeys()
	fs.DurationVar(&mk.AttemptTimeout, keyAttemptTimeout, mk.AttemptTimeout, "bound on one HTTP attempt to the model")
	fs.DurationVar(&mk.CallTimeout, keyCallTimeout, mk.CallTimeout, "bound on one model turn, retries and waits included")
	fs.IntVar(&mk.MaxRetries, keyMaxRetries, mk.MaxRetries, "retries of a 429, 5xx, timeout or network failure")
	fs.DurationVar(&mk.Backoff, keyBackoff, mk.Backoff, "wait before the first retry, doubled per retry")
	fs.DurationVar(&mk.MaxBackoff, keyMaxBackoff, mk.MaxBackoff, "longest wait between retries")
	fs.BoolVar(&mk.Stream, keyStream, mk.Stream, "ask for the reply as server-sent events")
	fs.BoolVar(&mk.Strict, keyStrict, mk.Strict, `send tools with "strict": true where the schema allows`)
	fs.Var(optionalBool{&mk.Parallel}, keyParallel, "send parallel_tool_calls")
	fs.StringVar(&mk.ToolChoice, keyToolChoice, "", "auto, none or required")
	feedbackPath := fs.String("feedback", "", "append feedback records (TOOL_USE_RELIABILITY §4) to this file; read them with `warden report tools`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var records *os.File
	if *feedbackPath != "" {
		f, err := os.OpenFile(*feedbackPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: --feedback: %v\n", err)
			return 2
		}
		defer f.Close()
		records = f
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, runUsage)
		return 2
	}
	if *native && (*wasm || *pluginDir != "") {
		fmt.Fprintln(stderr, "warden run: --native runs the plugins in-process; drop --wasm and --plugins")
		return 2
	}
	var m model.Model
	switch *modelKind {
	case "":
	case "openai":
		if *baseURL == "" || *modelName == "" {
			fmt.Fprintln(stderr, "warden run: --model openai needs --base-url and --model-name")
			return 2
		}
		key := ""
		if *keyEnv != "" {
			if key = os.Getenv(*keyEnv); key == "" {
				fmt.Fprintf(stderr, "warden run: %s is empty\n", *keyEnv)
				return 2
			}
		}
		if err := mk.validate(); err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			return 2
		}
		cfg := mk.config(*baseURL, key, *modelName)
		// Retries and strict fallbacks at WARN, without the time: the
		// trace on stdout already orders events.
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))
		c, err := openai.New(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			return 2
		}
		m = c
	default:
		fmt.Fprintf(stderr, "warden run: unknown model %q (want openai)\n", *modelKind)
		return 2
	}
	var scenarios []scenario.Scenario
	for _, f := range fs.Args() {
		s, err := scenario.Load(f)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			return 2
		}
		scenarios = append(scenarios, s)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)

	// The plugins are loaded once for every scenario, and named once.
	base := scenario.Options{Native: *native}
	if !*native {
		root, err := cacheRoot(*cacheDir)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: --cache-dir: %v\n", err)
			return 2
		}
		if base.Plugins, err = firstPartySet(ctx, *pluginDir, root, stderr); err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			return 2
		}
		base.CacheDir = compiledDir(root)
	}
	info, err := scenario.LoadPlugins(ctx, base)
	if err != nil {
		fmt.Fprintf(stderr, "warden run: %v\n", err)
		return 2
	}
	for _, p := range info {
		if *asJSON {
			_ = enc.Encode(p)
		} else {
			fmt.Fprintln(stdout, p)
		}
	}
	code := 0
	for _, s := range scenarios {
		if !*asJSON {
			fmt.Fprintf(stdout, "=== %s (%s)\n", s.Name, s.File)
		}
		var fb *feedback.Sink
		if records != nil {
			fb = feedback.NewSink(records, s.Name)
		}
		sink := loop.SinkFunc(func(e loop.Event) {
			if fb != nil {
				fb.Emit(e)
			}
			if *asJSON {
				_ = enc.Encode(e)
			} else {
				fmt.Fprintln(stdout, scenario.FormatEvent(e))
			}
			if e.Level == "WARN" && e.Outcome == "FAILED" {
				log.Warn("tool call failed", "scenario", s.Name, "seq", e.Seq, "tool", e.Tool, "code", e.Code, "name", e.Name, "message", e.Message)
			}
		})
		var rec *failureRecorder
		opts := base
		opts.Sink = sink
		opts.Installed = func(p scenario.PluginInfo) {
			if *asJSON {
				_ = enc.Encode(p)
			} else {
				fmt.Fprintln(stdout, p)
			}
		}
		if m != nil {
			rec = &failureRecorder{Model: m}
			opts.Model = rec
		}
		rep, err := scenario.Run(ctx, s, opts)
		if fb != nil && fb.Err() != nil {
			fmt.Fprintf(stderr, "warden run: --feedback: %v\n", fb.Err())
			code = max(code, 2)
		}
		if err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			code = max(code, 2)
			continue
		}
		verdict := "PASS"
		switch pe := rec.failure(); {
		case pe != nil:
			fmt.Fprintf(stderr, "warden run: %s: %v\n", s.Name, pe)
			verdict = "ERROR (model provider failed: " + model.KindName(pe) + ")"
			code = max(code, providerExit(pe))
		case rep.Skipped():
			verdict = "SKIP (pending: " + rep.Pending + ")"
		case rep.Unchecked && rep.Err != nil:
			// A scripted run lists its run error among the mismatches.
			fmt.Fprintf(stderr, "warden run: %s: %v\n", s.Name, rep.Err)
			verdict = "ERROR (the run failed)"
			code = max(code, 1)
		case rep.Unchecked:
			verdict = "DONE (real model: expectations not checked)"
		case !rep.Passed():
			verdict = "FAIL"
			code = max(code, 1)
		}
		if len(rep.Graph) > 0 {
			// A task scenario: the graph after its nodes' traces.
			if *asJSON {
				_ = enc.Encode(graphLine{Kind: "GRAPH", Scenario: s.Name, Graph: rep.Graph})
			} else {
				fmt.Fprint(stdout, "graph:\n    "+strings.ReplaceAll(strings.TrimSuffix(scenario.FormatGraph(rep.Graph), "\n"), "\n", "\n    ")+"\n")
			}
		}
		summary := fmt.Sprintf("--- %s %s: node %s, task %s (%s)", verdict, s.Name, orDash(string(rep.Status)), orDash(string(rep.Task)), rep.Duration.Round(1e6))
		out := stdout
		if *asJSON {
			out = stderr
		}
		fmt.Fprintln(out, summary)
		for _, mm := range rep.Mismatches {
			fmt.Fprintln(out, "    "+strings.ReplaceAll(mm, "\n", "\n    "))
		}
	}
	return code
}

// graphLine is the task graph of a task scenario under --json, one line
// after its events.
type graphLine struct {
	Kind     string               `json:"kind"`
	Scenario string               `json:"scenario"`
	Graph    []scenario.GraphNode `json:"graph"`
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dropTime removes the time attribute of a log record.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// failureRecorder remembers the first provider failure of a real model's
// turns, so that warden run can say the run stopped because the provider
// failed (exit 3) rather than only that it failed; a later turn, failed
// or not, does not replace it.
type failureRecorder struct {
	model.Model
	mu    sync.Mutex
	first *model.ProviderError
}

func (r *failureRecorder) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := r.Model.Complete(ctx, req)
	var pe *model.ProviderError
	if errors.As(err, &pe) {
		r.mu.Lock()
		if r.first == nil {
			r.first = pe
		}
		r.mu.Unlock()
	}
	return resp, err
}

// failure is the first provider failure, nil if there was none or r is
// nil (a scripted run).
func (r *failureRecorder) failure() *model.ProviderError {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}
