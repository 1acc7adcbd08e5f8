package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentwarden/warden/loop"
)

// NewLogger returns a logger writing JSON lines to w at level: "debug",
// "info", "warn" or "error".
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// LogMessage is the message of every record LogSink writes.
const LogMessage = "loop event"

// LogSink returns a loop.Sink that logs each trace event of one session as
// one record: tenant, session, seq, kind, task, node, tool, outcome, code,
// name (the code's name), category, status, stalls and message, empty
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
	attrs := make([]slog.Attr, 0, 14)
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
	attrs = append(attrs, slog.Int("stalls", e.Stalls))
	str("message", e.Message)
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
