package telemetry_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/telemetry"
)

// TestLogTraceIDs checks that a record logged with a traced context carries
// its trace and span ids, beside attributes and inside groups, and that one
// logged without a span, or with an invalid one, does not.
func TestLogTraceIDs(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"traced", func(l *slog.Logger) { l.InfoContext(traced, "call", "tool", "query_space") },
			`{"level":"INFO","msg":"call","tool":"query_space","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}`},
		{"with attrs", func(l *slog.Logger) { l.With("tenant", "acme").WarnContext(traced, "slow") },
			`{"level":"WARN","msg":"slow","tenant":"acme","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}`},
		{"in a group", func(l *slog.Logger) { l.WithGroup("mcp").ErrorContext(traced, "down", "server", "cms") },
			`{"level":"ERROR","msg":"down","mcp":{"server":"cms","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}}`},
		{"no span", func(l *slog.Logger) { l.InfoContext(context.Background(), "start") },
			`{"level":"INFO","msg":"start"}`},
		{"no context", func(l *slog.Logger) { l.Info("start") },
			`{"level":"INFO","msg":"start"}`},
		{"invalid span", func(l *slog.Logger) {
			l.InfoContext(trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}), "start")
		}, `{"level":"INFO","msg":"start"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tt.log(slog.New(telemetry.NewTraceHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))))
			if got := strings.TrimSuffix(buf.String(), "\n"); got != tt.want {
				t.Fatalf("record\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestNewLoggerTraceIDs checks that NewLogger's records carry the ids.
func TestNewLoggerTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := telemetry.NewLogger(&buf, "info")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "x")
	if want := `"trace_id":"01000000000000000000000000000000","span_id":"0200000000000000"}`; !strings.HasSuffix(strings.TrimSpace(buf.String()), want) {
		t.Fatalf("record %s, want it to end %s", buf.String(), want)
	}
}

func noTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
