package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/loop"
)

// NewLogger returns a logger writing JSON lines to w at level: "debug",
// "info", "warn" or "error". A record logged with a context that holds a
// span (the ...Context methods, or Log and LogAttrs) carries its trace_id
// and span_id (NewTraceHandler).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("telemetry: log level %q (want debug, info, warn or error): %w", level, ErrLogLevel)
	}
	return slog.New(NewTraceHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))), nil
}

// Keys of the trace and span ids a record logged in a traced context
// carries: the W3C hex forms, as OpenTelemetry's log data model names them.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// NewTraceHandler wraps h so that a record whose context holds a valid span
// context carries LogTraceID and LogSpanID, beside the record's own
// attributes (inside the groups the logger opened, like them).
func NewTraceHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// LogMessage is the message of every record LogSink writes.
const LogMessage = "loop event"

// LogSink returns a loop.Sink that logs each trace event of one session as
// one record: tenant, session, seq, kind, task, node, tool, outcome, code,
// name (the code's name), category, status, stalls, message, and the
// trace_id and span_id of the span the event happened under, empty
// strings left out, at the event's level (INFO, WARN, …). A nil log drops
// the events.
func LogSink(log *slog.Logger, tenant, session string) loop.Sink {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &logSink{log: log, tenant: tenant, session: session}
}

type logSink struct {
	log             *slog.Logger
	tenant, session string
}

// Emit logs e.
func (s *logSink) Emit(e loop.Event) {
	ctx := context.Background()
	level := eventLevel(e.Level)
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	str("tenant", s.tenant)
	str("session", s.session)
	attrs = append(attrs, slog.Int64("seq", e.Seq), slog.String("kind", string(e.Kind)))
	str("task", e.Task)
	str("node", e.Node)
	str("tool", e.Tool)
	str("outcome", e.Outcome)
	str("code", e.Code)
	str("name", e.Name)
	str("category", e.Category)
	str("status", e.Status)
	str("guard", e.Guard)
	str("plugin", e.Plugin)
	if e.Generation != 0 {
		attrs = append(attrs, slog.Uint64("generation", e.Generation))
	}
	if len(e.Guards) > 0 {
		// Every guard that ran on the call, with its plugin's generation.
		gs := make([]string, len(e.Guards))
		for i, g := range e.Guards {
			gs[i] = g.String()
		}
		attrs = append(attrs, slog.Any("guards", gs))
	}
	attrs = append(attrs, slog.Int("stalls", e.Stalls))
	str("message", e.Message)
	str(LogTraceID, e.TraceID)
	str(LogSpanID, e.SpanID)
	s.log.LogAttrs(ctx, level, LogMessage, attrs...)
}

// eventLevel maps an event's Level to slog's; "" and unknown levels are
// INFO.
func eventLevel(l string) slog.Level {
	switch l {
	case "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR":
		return slog.LevelError
	}
	return slog.LevelInfo
}
