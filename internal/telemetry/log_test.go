package telemetry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/loop"
)

// TestLogSink checks the exact record of each kind of event.
func TestLogSink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		event loop.Event
		want  string
	}{
		{"tool deferred",
			loop.Event{Seq: 3, Task: "t1", Node: "t1.a", Kind: loop.KindTool, Tool: "create_site", Outcome: "DEFERRED",
				Code: "agent_runtime.42221", Name: "APPROVAL_REQUIRED", Category: "permission", Message: "该写操作须经用户确认。", Status: "RUNNING", Level: "INFO"},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":3,"kind":"TOOL","task":"t1","node":"t1.a","tool":"create_site","outcome":"DEFERRED","code":"agent_runtime.42221","name":"APPROVAL_REQUIRED","category":"permission","status":"RUNNING","stalls":0,"message":"该写操作须经用户确认。"}`},
		{"tool failed is a warning",
			loop.Event{Seq: 4, Task: "t1", Node: "t1.a", Kind: loop.KindTool, Tool: "query_space", Outcome: "FAILED",
				Code: "agent_runtime.40016", Name: "TOOL_TIMEOUT", Category: "tool", Stalls: 1, Level: "WARN"},
			`{"level":"WARN","msg":"loop event","tenant":"acme","session":"s1","seq":4,"kind":"TOOL","task":"t1","node":"t1.a","tool":"query_space","outcome":"FAILED","code":"agent_runtime.40016","name":"TOOL_TIMEOUT","category":"tool","stalls":1}`},
		{"shadow guard decision names its plugin",
			loop.Event{Seq: 5, Task: "t1", Node: "t1.a", Kind: loop.KindGuard, Tool: "create_website", Outcome: "REJECTED",
				Code: "agent_runtime.40032", Name: "ARG_REJECTED", Category: "argument", Status: "SHADOW", Guard: "domainguard@0.1.0",
				Plugin: "domainguard@0.1.0", Message: "域名 evil.org 不属于本租户的域名。下一步：询问用户", Level: "INFO"},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":5,"kind":"GUARD","task":"t1","node":"t1.a","tool":"create_website","outcome":"REJECTED","code":"agent_runtime.40032","name":"ARG_REJECTED","category":"argument","status":"SHADOW","guard":"domainguard@0.1.0","plugin":"domainguard@0.1.0","stalls":0,"message":"域名 evil.org 不属于本租户的域名。下一步：询问用户"}`},
		{"decided by a slot generation",
			loop.Event{Seq: 6, Task: "t1", Node: "t1.a", Kind: loop.KindTool, Tool: "create_site", Outcome: "DEFERRED", Name: "APPROVAL_REQUIRED",
				Guard: "WriteGate", Plugin: "writegate@1.0.0", Generation: 2, Level: "INFO", Guards: []loop.GuardRun{
					{Guard: "ArgPolicy", Phase: "before", Plugin: "argpolicy@1.0.0", Generation: 1, Verdict: "pass"},
					{Guard: "acme/domainguard@0.1.0", Phase: "before", Plugin: "domainguard@0.1.0", Verdict: "REJECTED ARG_REJECTED", Policy: "shadow"},
					{Guard: "WriteGate", Phase: "before", Plugin: "writegate@1.0.0", Generation: 2, Verdict: "DEFERRED APPROVAL_REQUIRED"}}},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":6,"kind":"TOOL","task":"t1","node":"t1.a","tool":"create_site","outcome":"DEFERRED","name":"APPROVAL_REQUIRED","guard":"WriteGate","plugin":"writegate@1.0.0","generation":2,` +
				`"guards":["before ArgPolicy argpolicy@1.0.0 gen 1: pass","before acme/domainguard@0.1.0 domainguard@0.1.0: REJECTED ARG_REJECTED [shadow]","before WriteGate writegate@1.0.0 gen 2: DEFERRED APPROVAL_REQUIRED"],"stalls":0}`},
		{"task",
			loop.Event{Seq: 1, Task: "t1", Kind: loop.KindTask, Status: "PLANNED", Message: "model a:site.builder", Level: "INFO"},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":1,"kind":"TASK","task":"t1","status":"PLANNED","stalls":0,"message":"model a:site.builder"}`},
		{"no level is info",
			loop.Event{Seq: 9, Node: "t1.a", Kind: loop.KindReact, Status: "no_tool_calls", Stalls: 2},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":9,"kind":"REACT","node":"t1.a","status":"no_tool_calls","stalls":2}`},
		{"traced",
			loop.Event{Seq: 11, Task: "t1", Node: "t1.a", Kind: loop.KindNode, Status: "DONE", Level: "INFO",
				TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"},
			`{"level":"INFO","msg":"loop event","tenant":"acme","session":"s1","seq":11,"kind":"NODE","task":"t1","node":"t1.a","status":"DONE","stalls":0,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}`},
		{"error",
			loop.Event{Seq: 10, Node: "t1.a", Kind: loop.KindNode, Status: "FAILED", Level: "ERROR"},
			`{"level":"ERROR","msg":"loop event","tenant":"acme","session":"s1","seq":10,"kind":"NODE","node":"t1.a","status":"FAILED","stalls":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
			telemetry.LogSink(log, "acme", "s1").Emit(tt.event)
			if got := strings.TrimSuffix(buf.String(), "\n"); got != tt.want {
				t.Fatalf("record\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestLogSinkLevel checks that events below the logger's level are dropped.
func TestLogSinkLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := telemetry.NewLogger(&buf, "warn")
	if err != nil {
		t.Fatal(err)
	}
	s := telemetry.LogSink(log, "acme", "s1")
	s.Emit(loop.Event{Seq: 1, Kind: loop.KindTool, Outcome: "SUCCESS", Level: "INFO"})
	s.Emit(loop.Event{Seq: 2, Kind: loop.KindTool, Outcome: "FAILED", Level: "WARN"})
	var seqs []float64
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seqs = append(seqs, rec["seq"].(float64))
	}
	if len(seqs) != 1 || seqs[0] != 2 {
		t.Fatalf("logged seqs %v, want [2]", seqs)
	}
}

// TestNewLogger checks which records each level keeps, and that the records
// are JSON with time, level and msg.
func TestNewLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level string
		want  []string
	}{
		{"debug", []string{"DEBUG d", "INFO i", "WARN w", "ERROR e"}},
		{"info", []string{"INFO i", "WARN w", "ERROR e"}},
		{"warn", []string{"WARN w", "ERROR e"}},
		{"error", []string{"ERROR e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log, err := telemetry.NewLogger(&buf, tt.level)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var rec struct {
					Time  string `json:"time"`
					Level string `json:"level"`
					Msg   string `json:"msg"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time == "" {
					t.Fatalf("record %q: %v", line, err)
				}
				got = append(got, rec.Level+" "+rec.Msg)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("records %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewLoggerRejects(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"", "INFO", "warning", "trace"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			_, err := telemetry.NewLogger(&bytes.Buffer{}, level)
			want := `telemetry: log level "` + level + `" (want debug, info, warn or error): unknown log level`
			if !errors.Is(err, telemetry.ErrLogLevel) || err.Error() != want {
				t.Fatalf("error %v, want %s", err, want)
			}
		})
	}
}
