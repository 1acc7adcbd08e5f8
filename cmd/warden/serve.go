package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/loop/state"
	"github.com/agentwarden/warden/model"
	"github.com/agentwarden/warden/model/openai"
	"github.com/agentwarden/warden/model/scripted"
	"github.com/agentwarden/warden/server"
	"github.com/agentwarden/warden/store/sqlstore"
	"github.com/agentwarden/warden/tools"
	"github.com/agentwarden/warden/tools/mcp"
)

// cmdServe runs the HTTP API until SIGTERM or SIGINT, then drains.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := loadServeConfig(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "warden serve: %v\n", err)
		return 2
	}
	if err := serve(ctx, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "warden serve: %v\n", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, c serveConfig, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	// The store first: a bad --store fails before any child process starts.
	var db *sqlstore.DB
	if c.storeDialect != "" {
		var err error
		if db, err = openStore(ctx, c, log); err != nil {
			return err
		}
		// Deferred first, so it runs last: after the listener's shutdown
		// and the server's Close, requests in flight finish on an open
		// database.
		defer db.Close()
	}

	var provider interface {
		tools.Provider
		Close() error
	}
	mc := mcp.Config{}
	if c.Tools == "mcp-command" {
		mc.Command = strings.Fields(c.MCPCommand)
	} else {
		mc.URL = c.MCPURL
	}
	client, err := mcp.Dial(ctx, mc)
	if err != nil {
		return &configError{c.Tools, err.Error()}
	}
	provider = client
	defer provider.Close()

	var newModel func(tenant, session string) (model.Model, error)
	if c.Model == "scripted" {
		newModel = func(string, string) (model.Model, error) { return scripted.New(c.script) }
	} else {
		oc := openai.Defaults(c.BaseURL, c.apiKey, c.ModelName)
		oc.Logger = log
		m, err := openai.New(oc)
		if err != nil {
			return &configError{"model", err.Error()}
		}
		newModel = func(string, string) (model.Model, error) { return m, nil }
	}

	keys := map[string]string{}
	codes := map[string]string{}
	for _, t := range c.keys.Tenants {
		for _, k := range t.Keys {
			keys[k] = t.Tenant
		}
		codes[t.Tenant] = t.Agent
	}
	opts := server.Options{
		Keys:       keys,
		AdminKeys:  c.keys.AdminKeys,
		Agents:     server.LoaderAgents{Loader: contract.NewLoader(contract.NewDirStore(c.Skills), log), Codes: codes},
		Tools:      provider,
		NewModel:   newModel,
		Loop:       loop.DefaultConfig(),
		RunTimeout: c.RunTimeout,
		Logger:     log,
	}
	if db != nil {
		opts.NewStore = func(id string) (state.Store, error) {
			// One db.Session per API session, configured as the
			// in-memory default would be.
			return db.Session(context.WithoutCancel(ctx), state.Options{SessionID: id})
		}
	}
	if len(c.keys.AdminKeys) > 0 {
		h, err := host.New(host.Options{CacheDir: c.PluginCache, Logger: log})
		if err != nil {
			return &configError{"plugin-cache", err.Error()}
		}
		defer h.Close(context.WithoutCancel(ctx))
		opts.Host = h
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.Check(ctx); err != nil {
		return &configError{"skills", err.Error()}
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return &configError{"addr", err.Error()}
	}
	// Requests see a context that ends when shutdown starts, so event
	// streams close; runs are detached from it and finish.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "warden: serving on http://%s\n", ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "tenants", len(codes), "admin", opts.Host != nil)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", c.Grace.String())
	srv.SetReady(false)
	cancelBase()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	fmt.Fprintln(stdout, "warden: stopped")
	return nil
}

// openStore opens the durable store --store names (bringing its schema up
// to date) and recovers the writes a previous process left STARTED.
// Every failure names --store.
func openStore(ctx context.Context, c serveConfig, log *slog.Logger) (*sqlstore.DB, error) {
	db, err := sqlstore.Open(ctx, c.storeDialect, c.storeDSN)
	if err != nil {
		return nil, &configError{"store", err.Error()}
	}
	n, err := recoverWrites(ctx, db, c.storeDialect, log)
	if err != nil {
		db.Close()
		return nil, &configError{"store", err.Error()}
	}
	log.Info("store opened", "dialect", string(c.storeDialect), "recovered_writes", n)
	return db, nil
}

// recoverWrites turns every write a dead process left STARTED into
// UNKNOWN_PRE_CALL (sqlstore's Store.RecoverWrites), so that its node
// verifies it instead of issuing it again.
//
// The store lists the sessions holding STARTED writes
// (DB.SessionsWithStartedWrites); each is recovered through its own Store.
//
// Only SQLite is recovered at start. It is the one-instance backend: every
// session in the file belongs to this process, and whatever is STARTED at
// start was left by a process that is gone. On PostgreSQL many instances
// share one database, and a write STARTED in it may belong to an instance
// that is alive and waiting for the tool's answer right now; recovering it
// would mark a live write uncertain and could have it verified while it
// runs. Recovery there must only touch the sessions of the instance that
// died, which needs each session's owner (an instance id with a lease) in
// the store; the schema has none yet, so on PostgreSQL nothing is
// recovered here and the STARTED writes stay as they are (logged) until
// that exists.
func recoverWrites(ctx context.Context, db *sqlstore.DB, d sqlstore.Dialect, log *slog.Logger) (int, error) {
	if d != sqlstore.SQLite {
		log.Warn("writes left STARTED by a dead instance are not recovered on PostgreSQL: sessions have no owning instance yet")
		return 0, nil
	}
	ids, err := db.SessionsWithStartedWrites(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover writes: %w", err)
	}
	n := 0
	for _, id := range ids {
		st, err := db.Session(ctx, state.Options{SessionID: id})
		if err != nil {
			return n, fmt.Errorf("recover writes: %w", err)
		}
		marked, err := st.RecoverWrites()
		if err != nil {
			return n, fmt.Errorf("recover writes of session %s: %w", id, err)
		}
		for _, e := range marked {
			log.Warn("write left STARTED marked UNKNOWN_PRE_CALL", "session", id, "node", e.NodeID, "tool", e.Tool)
		}
		n += len(marked)
	}
	return n, nil
}
