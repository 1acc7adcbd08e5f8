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
	f, files, ok := parseRunFlags(args, stderr)
	if !ok {
		return 2
	}
	if f.feedbackPath != "" {
		file, err := os.OpenFile(f.feedbackPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: --feedback: %v\n", err)
			return 2
		}
		defer file.Close()
		f.records = file
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, runUsage)
		return 2
	}
	if f.native && (f.wasm || f.pluginDir != "") {
		fmt.Fprintln(stderr, "warden run: --native runs the plugins in-process; drop --wasm and --plugins")
		return 2
	}
	r := &scenarioRunner{runFlags: f, stdout: stdout, stderr: stderr}
	var err error
	if r.model, err = f.realModel(stderr); err != nil {
		fmt.Fprintf(stderr, "warden run: %v\n", err)
		return 2
	}
	var scenarios []scenario.Scenario
	for _, file := range files {
		s, err := scenario.Load(file)
		if err != nil {
			fmt.Fprintf(stderr, "warden run: %v\n", err)
			return 2
		}
		scenarios = append(scenarios, s)
	}
	r.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r.enc = json.NewEncoder(stdout)
	r.enc.SetEscapeHTML(false)
	if err := r.loadPlugins(ctx); err != nil {
		fmt.Fprintf(stderr, "warden run: %v\n", err)
		return 2
	}
	code := 0
	for _, s := range scenarios {
		code = max(code, r.run(ctx, s))
	}
	return code
}

// runFlags are warden run's flags.
type runFlags struct {
	asJSON, native, wasm                  bool
	pluginDir, cacheDir                   string
	modelKind, baseURL, keyEnv, modelName string
	mk                                    modelKeys
	feedbackPath                          string
	records                               *os.File // the --feedback file, opened
}

// parseRunFlags parses warden run's command line into its flags and the
// scenario files; not ok is a usage error, already printed.
func parseRunFlags(args []string, stderr io.Writer) (f *runFlags, files []string, ok bool) {
	f = &runFlags{mk: defaultModelKeys()}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage) }
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON trace event per line")
	fs.BoolVar(&f.native, "native", false, "run the first-party guards and builtins in-process")
	fs.BoolVar(&f.wasm, "wasm", false, "run the first-party guards and builtins as wasm (the default)")
	fs.StringVar(&f.pluginDir, "plugins", "", "the first-party wasm modules from this directory")
	fs.StringVar(&f.cacheDir, "cache-dir", os.Getenv(cacheEnv), "built plugins and compiled code")
	fs.StringVar(&f.modelKind, "model", "", `"openai" runs a real OpenAI-compatible model instead of the scripted turns`)
	fs.StringVar(&f.baseURL, "base-url", "", "the model's base URL (with --model openai)")
	fs.StringVar(&f.keyEnv, "api-key-env", "", "the environment variable holding the API key (with --model openai)")
	fs.StringVar(&f.modelName, "model-name", "", "the model name (with --model openai)")
	mk := &f.mk
	fs.DurationVar(&mk.AttemptTimeout, keyAttemptTimeout, mk.AttemptTimeout, "bound on one HTTP attempt to the model")
	fs.DurationVar(&mk.CallTimeout, keyCallTimeout, mk.CallTimeout, "bound on one model turn, retries and waits included")
	fs.IntVar(&mk.MaxRetries, keyMaxRetries, mk.MaxRetries, "retries of a 429, 5xx, timeout or network failure")
	fs.DurationVar(&mk.Backoff, keyBackoff, mk.Backoff, "wait before the first retry, doubled per retry")
	fs.DurationVar(&mk.MaxBackoff, keyMaxBackoff, mk.MaxBackoff, "longest wait between retries")
	fs.BoolVar(&mk.Stream, keyStream, mk.Stream, "ask for the reply as server-sent events")
	fs.BoolVar(&mk.Strict, keyStrict, mk.Strict, `send tools with "strict": true where the schema allows`)
	fs.Var(optionalBool{&mk.Parallel}, keyParallel, "send parallel_tool_calls")
	fs.StringVar(&mk.ToolChoice, keyToolChoice, "", "auto, none or required")
	fs.StringVar(&f.feedbackPath, "feedback", "", "append feedback records (TOOL_USE_RELIABILITY §4) to this file; read them with `warden report tools`")
	if err := fs.Parse(args); err != nil {
		return nil, nil, false
	}
	return f, fs.Args(), true
}

// realModel is the model --model names: nil for the scenarios' scripted
// turns.
func (f *runFlags) realModel(stderr io.Writer) (model.Model, error) {
	switch f.modelKind {
	case "":
		return nil, nil
	case "openai":
	default:
		return nil, fmt.Errorf("unknown model %q (want openai)", f.modelKind)
	}
	if f.baseURL == "" || f.modelName == "" {
		return nil, errors.New("--model openai needs --base-url and --model-name")
	}
	key := ""
	if f.keyEnv != "" {
		if key = os.Getenv(f.keyEnv); key == "" {
			return nil, fmt.Errorf("%s is empty", f.keyEnv)
		}
	}
	if err := f.mk.validate(); err != nil {
		return nil, err
	}
	cfg := f.mk.config(f.baseURL, key, f.modelName)
	// Retries and strict fallbacks at WARN, without the time: the
	// trace on stdout already orders events.
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))
	return openai.New(cfg)
}

// scenarioRunner runs warden run's scenarios one after the other and
// prints their traces and verdicts.
type scenarioRunner struct {
	*runFlags
	model          model.Model // nil: the scripted turns
	base           scenario.Options
	log            *slog.Logger
	enc            *json.Encoder
	stdout, stderr io.Writer
}

// loadPlugins loads the plugins once for every scenario, and names them
// once.
func (r *scenarioRunner) loadPlugins(ctx context.Context) error {
	r.base = scenario.Options{Native: r.native}
	if !r.native {
		root, err := cacheRoot(r.cacheDir)
		if err != nil {
			return fmt.Errorf("--cache-dir: %w", err)
		}
		if r.base.Plugins, err = firstPartySet(ctx, r.pluginDir, root, r.stderr); err != nil {
			return err
		}
		r.base.CacheDir = compiledDir(root)
	}
	info, err := scenario.LoadPlugins(ctx, r.base)
	if err != nil {
		return err
	}
	for _, p := range info {
		r.printPlugin(p)
	}
	return nil
}

// printPlugin prints a plugin's line of the trace.
func (r *scenarioRunner) printPlugin(p scenario.PluginInfo) {
	if r.asJSON {
		_ = r.enc.Encode(p)
	} else {
		fmt.Fprintln(r.stdout, p)
	}
}

// run runs one scenario, prints its trace and verdict and returns its exit
// code.
func (r *scenarioRunner) run(ctx context.Context, s scenario.Scenario) int {
	if !r.asJSON {
		fmt.Fprintf(r.stdout, "=== %s (%s)\n", s.Name, s.File)
	}
	var fb *feedback.Sink
	if r.records != nil {
		fb = feedback.NewSink(r.records, s.Name)
	}
	var rec *failureRecorder
	opts := r.base
	opts.Sink = r.sink(s, fb)
	opts.Installed = r.printPlugin
	if r.model != nil {
		rec = &failureRecorder{Model: r.model}
		opts.Model = rec
	}
	rep, err := scenario.Run(ctx, s, opts)
	code := 0
	if fb != nil && fb.Err() != nil {
		fmt.Fprintf(r.stderr, "warden run: --feedback: %v\n", fb.Err())
		code = 2
	}
	if err != nil {
		fmt.Fprintf(r.stderr, "warden run: %v\n", err)
		return 2
	}
	verdict, vcode := r.verdict(s, rep, rec)
	code = max(code, vcode)
	if len(rep.Graph) > 0 {
		// A task scenario: the graph after its nodes' traces.
		if r.asJSON {
			_ = r.enc.Encode(graphLine{Kind: "GRAPH", Scenario: s.Name, Graph: rep.Graph})
		} else {
			fmt.Fprint(r.stdout, "graph:\n    "+strings.ReplaceAll(strings.TrimSuffix(scenario.FormatGraph(rep.Graph), "\n"), "\n", "\n    ")+"\n")
		}
	}
	summary := fmt.Sprintf("--- %s %s: node %s, task %s (%s)", verdict, s.Name, orDash(string(rep.Status)), orDash(string(rep.Task)), rep.Duration.Round(1e6))
	out := r.stdout
	if r.asJSON {
		out = r.stderr
	}
	fmt.Fprintln(out, summary)
	for _, mm := range rep.Mismatches {
		fmt.Fprintln(out, "    "+strings.ReplaceAll(mm, "\n", "\n    "))
	}
	return code
}

// sink prints a scenario's trace events, records them with --feedback and
// logs a failed tool call.
func (r *scenarioRunner) sink(s scenario.Scenario, fb *feedback.Sink) loop.Sink {
	return loop.SinkFunc(func(e loop.Event) {
		if fb != nil {
			fb.Emit(e)
		}
		if r.asJSON {
			_ = r.enc.Encode(e)
		} else {
			fmt.Fprintln(r.stdout, scenario.FormatEvent(e))
		}
		if e.Level == "WARN" && e.Outcome == "FAILED" {
			r.log.Warn("tool call failed", "scenario", s.Name, "seq", e.Seq, "tool", e.Tool, "code", e.Code, "name", e.Name, "message", e.Message)
		}
	})
}

// verdict is a run's verdict and exit code.
func (r *scenarioRunner) verdict(s scenario.Scenario, rep scenario.Report, rec *failureRecorder) (string, int) {
	switch pe := rec.failure(); {
	case pe != nil:
		fmt.Fprintf(r.stderr, "warden run: %s: %v\n", s.Name, pe)
		return "ERROR (model provider failed: " + model.KindName(pe) + ")", providerExit(pe)
	case rep.Skipped():
		return "SKIP (pending: " + rep.Pending + ")", 0
	case rep.Unchecked && rep.Err != nil:
		// A scripted run lists its run error among the mismatches.
		fmt.Fprintf(r.stderr, "warden run: %s: %v\n", s.Name, rep.Err)
		return "ERROR (the run failed)", 1
	case rep.Unchecked:
		return "DONE (real model: expectations not checked)", 0
	case !rep.Passed():
		return "FAIL", 1
	}
	return "PASS", 0
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
