package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
	"github.com/agentwarden/warden/loop"
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
	log, err := telemetry.NewLogger(stderr, c.LogLevel)
	if err != nil {
		return &configError{"log-level", err.Error()}
	}
	// OpenTelemetry's own errors are records of serve's log.
	telemetry.LogOTel(log)
	shutdownTracing, err := telemetry.SetupTracing(c.Trace, attribute.String("service.instance.id", c.Instance))
	if err != nil {
		return &configError{"trace", err.Error()}
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdownTracing(sctx); err != nil {
			log.Error("trace export failed", "err", err)
		}
	}()

	// The store first: a bad --store fails before any child process starts.
	var db *sqlstore.DB
	if c.storeDialect != "" {
		if db, err = sqlstore.Open(ctx, c.storeDialect, c.storeDSN); err != nil {
			return &configError{"store", err.Error()}
		}
		// Deferred first, so it runs last: after the listener's shutdown
		// and the server's Close, requests in flight finish on an open
		// database.
		defer db.Close()
		log.Info("store opened", "dialect", string(c.storeDialect))
	}

	var provider interface {
		tools.Provider
		Close() error
	}
	mc := mcp.Config{Logger: log}
	switch c.Tools {
	case "mcp-command":
		mc.Command = strings.Fields(c.MCPCommand)
	case "mcp-url":
		mc.URL = c.MCPURL
	}
	if c.Tools == "mcp-servers" {
		for i := range c.mcpServers {
			c.mcpServers[i].Logger = log.With("mcp_server", c.mcpServers[i].Name)
		}
		// Every server is started and listed now: a tool name offered
		// twice is refused before anything is served.
		servers, err := mcp.DialAll(ctx, c.mcpServers)
		if err != nil {
			return &configError{"mcp-servers", err.Error()}
		}
		provider = servers
	} else {
		client, err := mcp.Dial(ctx, mc)
		if err != nil {
			return &configError{c.Tools, err.Error()}
		}
		provider = client
	}
	defer provider.Close()

	var newModel func(tenant, session string) (model.Model, error)
	if c.Model == "scripted" {
		newModel = func(string, string) (model.Model, error) { return scripted.New(c.script) }
	} else {
		oc := c.model.config(c.BaseURL, c.apiKey, c.ModelName)
		oc.Logger = log
		m, err := openai.New(oc)
		if err != nil {
			return &configError{"model", err.Error()}
		}
		newModel = func(string, string) (model.Model, error) { return m, nil }
	}

	keys := map[string]string{}
	codes := map[string]string{}
	grants := map[string][]abi.Capability{}
	for _, t := range c.keys.Tenants {
		for _, k := range append(slices.Clone(t.Keys), t.GatewayKeys...) {
			keys[k] = t.Tenant
		}
		codes[t.Tenant] = t.Agent
		if len(t.Capabilities) > 0 {
			grants[t.Tenant] = t.Capabilities
		}
	}
	opts := server.Options{
		Keys:        keys,
		AdminKeys:   c.keys.AdminKeys,
		MetricsKeys: c.keys.MetricsKeys,
		// Each tenant's plugins may have the capabilities keys.json grants
		// it, no more.
		Capabilities: grants,
		Limits:       c.Limits,
		Agents:       server.LoaderAgents{Loader: contract.NewLoader(contract.NewDirStore(c.Skills), log), Codes: codes},
		Tools:        provider,
		NewModel:     newModel,
		Loop:         c.spec.loop,
		RunTimeout:   c.RunTimeout,
		Logger:       log,
		Instance:     c.Instance,
		Lease:        c.Lease,
		Plugins:      c.Plugins,
	}
	opts.State, opts.AgentSettings, opts.Platform = c.spec.state, c.spec.agentSettings, c.spec.platform
	if db != nil {
		opts.Directory, opts.Generations = db, db
		opts.NewStore = func(_ string, opt state.Options) (state.Store, error) {
			// One db.Session per API session, configured as the
			// in-memory default would be.
			return db.Session(context.WithoutCancel(ctx), opt)
		}
		// Writes a dead process left STARTED are recovered when their
		// session is claimed: at start, and every lease period, for the
		// sessions this instance may take. SQLite has one instance:
		// whoever held the file before is gone.
		opts.Recoverable = db.SessionsWithStartedWrites
		// GET /admin/v1/instances: every instance of the database.
		opts.Instances = func(ctx context.Context) ([]server.Instance, error) {
			list, err := db.Instances(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]server.Instance, 0, len(list))
			for _, in := range list {
				si := server.Instance{ID: in.ID, Sessions: in.Sessions, Self: in.ID == c.Instance}
				if !in.LeaseUntil.IsZero() {
					until := in.LeaseUntil
					si.LeaseUntil = &until
				}
				out = append(out, si)
			}
			return out, nil
		}
		opts.Exclusive = c.storeDialect == sqlstore.SQLite
		opts.IdleTimeout = c.IdleTimeout
	}
	// The first-party plugins run as wasm unless --native: from --plugins,
	// else the embedded ones or those built from source, written out as a
	// plugin directory under the cache. Only --plugins is watched.
	if !c.Native {
		root, err := cacheRoot(c.CacheDir)
		if err != nil {
			return &configError{"cache-dir", err.Error()}
		}
		if c.PluginCache == "" {
			c.PluginCache = compiledDir(root)
		}
		if opts.Plugins == "" {
			set, err := firstPartySet(ctx, "", root, stderr)
			if err != nil {
				return &configError{"plugins", err.Error()}
			}
			if opts.Plugins, err = set.WriteDir(firstparty.Options{CacheDir: filepath.Join(root, "plugins")}); err != nil {
				return &configError{"cache-dir", err.Error()}
			}
			log.Info("first-party plugins", "from", set.String(), "digest", set.Digest())
		}
	}
	// Always a host: the tenants' own plugins (PUT /v1/plugins) load in
	// it, as the admin's slots and the plugin directory's modules do.
	{
		h, err := host.New(host.Options{CacheDir: c.PluginCache, Logger: log, PluginTime: c.PluginTime, PluginBurst: c.PluginBurst})
		if err != nil {
			return &configError{"plugin-cache", err.Error()}
		}
		defer h.Close(context.WithoutCancel(ctx))
		opts.Host = h
	}

	// Trace events go to the session's API stream and to the metrics, the
	// log and (with a durable store) the feedback records.
	var srv *server.Server
	metrics, err := telemetry.NewMetrics(telemetry.MetricsOptions{Runtime: true, Plugins: func() []telemetry.PluginSample {
		var out []telemetry.PluginSample
		for _, sl := range srv.Slots() {
			out = append(out, telemetry.SampleSlotGenerations(sl)...)
		}
		return out
	}, PluginTimeRefused: func() map[string]uint64 {
		if opts.Host == nil {
			return nil
		}
		return opts.Host.PluginTimeRefused()
	}})
	if err != nil {
		return err
	}
	var feedbackSink func(tenant, session string) loop.Sink
	if db != nil && c.Feedback {
		observe, stopFeedback, err := feedbackObserver(db, log)
		if err != nil {
			return err
		}
		// Runs after the server's Close, before the database's.
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Grace)
			defer cancel()
			if err := stopFeedback(sctx); err != nil {
				log.Error("feedback records lost", "err", err)
			}
		}()
		feedbackSink = observe
		// GET /v1/feedback/tools summarises the records kept.
		opts.Feedback = db
	}
	opts.Observe = func(tenant, session string) loop.Sink {
		sinks := []loop.Sink{metrics.Sink(tenant), telemetry.LogSink(log, tenant, session)}
		if feedbackSink != nil {
			sinks = append(sinks, feedbackSink(tenant, session))
		}
		return loop.SinkFunc(func(e loop.Event) {
			for _, s := range sinks {
				s.Emit(e)
			}
		})
	}

	if c.Model == "openai" {
		// Each turn's tokens and each provider failure count per tenant.
		perSession := opts.NewModel
		opts.NewModel = func(tenant, session string) (model.Model, error) {
			m, err := perSession(tenant, session)
			if err != nil {
				return nil, err
			}
			return metrics.Model(m, tenant, c.ModelName)
		}
	}

	if err := installKillpoints(&opts, log); err != nil {
		return err
	}
	srv, err = server.New(opts)
	if err != nil {
		return err
	}
	// A stop closes the server once its runs have ended within the grace
	// period; runs still going then are left to the next start's recovery
	// (a run is durable at every step), not waited for up to their run
	// timeout.
	drained := true
	defer func() {
		if drained {
			srv.Close()
		}
	}()
	if err := selfTested(ctx, srv.LoadPlugins); err != nil {
		return &configError{"plugins", err.Error()}
	}
	// The slots' desired generations in the store serve, not those just
	// loaded, when another instance (or this one before a restart)
	// installed them; afterwards this instance follows the store.
	if err := srv.SyncSlots(ctx); err != nil {
		return &configError{"store", err.Error()}
	}
	logPlugins(log, srv.Slots(), c.Native)
	if err := srv.Check(ctx); err != nil {
		return &configError{"skills", err.Error()}
	}
	if err := srv.Start(ctx); err != nil {
		return &configError{"store", err.Error()}
	}
	{
		fctx, stopFollow := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() { defer close(followed); srv.Follow(fctx) }()
		// Runs before the server's Close.
		defer func() { stopFollow(); <-followed }()
	}
	if c.Plugins != "" && c.WatchInterval > 0 {
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			if err := srv.Watch(wctx, c.WatchInterval); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("plugin directory watch stopped", "err", err)
			}
		}()
		// Runs before the server's Close.
		defer func() { stopWatch(); <-watched }()
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return &configError{"addr", err.Error()}
	}
	// Requests see a context that ends when shutdown starts, so event
	// streams close; runs are detached from it and finish.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	// The metrics name every tenant: on the API's address they answer an
	// admin or metrics key only; on an address of their own (a private
	// interface a scraper reaches) they need none, and the API's address
	// does not serve them.
	mux := http.NewServeMux()
	var ms *http.Server
	errc := make(chan error, 2)
	if c.MetricsAddr == "" {
		mux.Handle("GET /metrics", srv.Operator(metrics.Handler()))
	} else {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			ln.Close()
			return &configError{"metrics-addr", err.Error()}
		}
		mm := http.NewServeMux()
		mm.Handle("GET /metrics", metrics.Handler())
		ms = &http.Server{Handler: mm, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- ms.Serve(mln) }()
		defer ms.Close()
		fmt.Fprintf(stdout, "warden: metrics on http://%s/metrics\n", mln.Addr())
	}
	mountConsole(mux, traceHTTP(metrics.Middleware(srv.Handler())))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "warden: serving on http://%s\n", ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "tenants", len(codes), "admin", len(c.keys.AdminKeys) > 0,
		"plugins", map[bool]string{false: "wasm", true: "native"}[c.Native], "store", string(c.storeDialect))

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
	// Requests answer 202 and leave their runs going: those get what is
	// left of the grace period.
	if err := srv.Drain(sctx); err != nil {
		drained = false
		log.Warn("runs still in flight at the end of the grace period: the next start recovers them", "grace", c.Grace.String())
	}
	fmt.Fprintln(stdout, "warden: stopped")
	return nil
}
