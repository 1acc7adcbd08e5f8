package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/agentwarden/warden/feedback"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/loop/scenario"
	"github.com/agentwarden/warden/model"
	"github.com/agentwarden/warden/model/openai"
)

const runUsage = `usage: warden run [--json] [--wasm] [--model openai --base-url URL --api-key-env VAR --model-name NAME] FILE...

Runs scenario files (docs/SCENARIOS.md) and checks their expectations.
A readable trace by default; --json prints one JSON event per line.
Exit 1 when an expectation fails, 2 on usage or file errors.
`

// cmdRun runs scenario files.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage) }
	asJSON := fs.Bool("json", false, "print one JSON trace event per line")
	wasm := fs.Bool("wasm", false, "run first-party guards and builtins as wasm")
	modelKind := fs.String("model", "", `"openai" runs a real OpenAI-compatible model instead of the scripted turns`)
	baseURL := fs.String("base-url", "", "the model's base URL (with --model openai)")
	keyEnv := fs.String("api-key-env", "", "the environment variable holding the API key (with --model openai)")
	modelName := fs.String("model-name", "", "the model name (with --model openai)")
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
		c, err := openai.New(openai.Defaults(*baseURL, key, *modelName))
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
		rep, err := scenario.Run(ctx, s, scenario.Options{Wasm: *wasm, Model: m, Sink: sink})
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
		switch {
		case rep.Skipped():
			verdict = "SKIP (pending: " + rep.Pending + ")"
		case rep.Unchecked:
			verdict = "DONE (real model: expectations not checked)"
		case !rep.Passed():
			verdict = "FAIL"
			code = max(code, 1)
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
