package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/loop"
)

// feedbackObserver records the tool calls of every session warden serve
// runs as feedback records (TOOL_USE_RELIABILITY §4) in db, where
// "warden report tools --store" reads them.
//
// observe is server.Options.Observe: it gives each session a Sink that
// queues the session's records without waiting, and one goroutine stores
// them in batches (feedback.Recorder). A record that cannot be stored is
// logged on log as it is lost, and counted.
//
// stop stores the records still queued, logs how many were stored and
// lost, and returns the first error that cost a record. Call it after the
// server's runs have ended (after the server's Close) and before db.Close.
func feedbackObserver(db *sqlstore.DB, log *slog.Logger) (observe func(tenant, session string) loop.Sink, stop func(context.Context) error, err error) {
	if db == nil {
		return nil, nil, errors.New("feedback: no database")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := feedback.DefaultRecorderOptions()
	o.Logger = log
	rec, err := feedback.NewRecorder(db, o)
	if err != nil {
		return nil, nil, err
	}
	observe = func(tenant, session string) loop.Sink { return rec.Sink(tenant, session) }
	stop = func(ctx context.Context) error {
		err := rec.Close(ctx)
		st := rec.Stats()
		log.Info("feedback records", "stored", st.Written, "lost", st.Lost)
		return err
	}
	return observe, stop, nil
}
