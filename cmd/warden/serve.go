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
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/skillstore"
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

// serve runs the service for c: its parts are set up in order (telemetry,
// store, tools, model, plugins, server, listeners), each torn down in
// reverse order when a stop has drained the requests in flight.
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
	db, err := openStore(ctx, c, log)
	if err != nil {
		return err
	}
	if db != nil {
		// Deferred first, so it runs last: after the listener's shutdown
		// and the server's Close, requests in flight finish on an open
		// database.
		defer db.Close()
	}
	provider, err := dialTools(ctx, c, log)
	if err != nil {
		return err
	}
	defer provider.Close()
	newModel, err := modelFactory(c, log)
	if err != nil {
		return err
	}
	opts := serverOptions(ctx, c, db, provider, newModel, log)
	if err := firstPartyPlugins(ctx, &c, &opts, log, stderr); err != nil {
		return err
	}
	// Always a host: the tenants' own plugins (PUT /v1/plugins) load in
	// it, as the admin's slots and the plugin directory's modules do.
	hopts := host.Options{CacheDir: c.PluginCache, Logger: log, PluginTime: c.PluginTime, PluginBurst: c.PluginBurst,
		MaxInstances: c.instances.Max, MaxInstanceBytes: c.instances.bytes, InstanceIdle: c.instances.Idle}
	if c.CompileWorker {
		w, err := compileWorker()
		if err != nil {
			return &configError{"compile-worker", err.Error()}
		}
		hopts.CompileWorker = w
	}
	h, err := host.New(hopts)
	if err != nil {
		return &configError{"plugin-cache", err.Error()}
	}
	defer h.Close(context.WithoutCancel(ctx))
	opts.Host = h

	var srv *server.Server
	metrics, stopFeedback, err := observe(c, db, &opts, &srv, log)
	if err != nil {
		return err
	}
	if stopFeedback != nil {
		// Runs after the server's Close, before the database's.
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Grace)
			defer cancel()
			if err := stopFeedback(sctx); err != nil {
				log.Error("feedback records lost", "err", err)
			}
		}()
	}
	opts.Forward = c.forwardOptions(metrics)
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
	stopWatch, err := startServer(ctx, c, srv, log)
	if err != nil {
		return err
	}
	// Runs before the server's Close.
	defer stopWatch()
	drained, err = listen(ctx, c, srv, metrics, log, stdout)
	return err
}

// openStore opens the durable store --store names; nil for memory.
func openStore(ctx context.Context, c serveConfig, log *slog.Logger) (*sqlstore.DB, error) {
	if c.storeDialect == "" {
		return nil, nil
	}
	db, err := sqlstore.Open(ctx, c.storeDialect, c.storeDSN)
	if err != nil {
		return nil, &configError{"store", err.Error()}
	}
	log.Info("store opened", "dialect", string(c.storeDialect))
	return db, nil
}

// toolProvider is the agents' MCP server or servers.
type toolProvider interface {
	tools.Provider
	Close() error
}

// dialTools starts or connects to the MCP server or servers --tools names.
func dialTools(ctx context.Context, c serveConfig, log *slog.Logger) (toolProvider, error) {
	if c.Tools == "mcp-servers" {
		for i := range c.mcpServers {
			c.mcpServers[i].Logger = log.With("mcp_server", c.mcpServers[i].Name)
		}
		// Every server is started and listed now: a tool name offered
		// twice is refused before anything is served.
		servers, err := mcp.DialAll(ctx, c.mcpServers)
		if err != nil {
			return nil, &configError{"mcp-servers", err.Error()}
		}
		return servers, nil
	}
	mc := mcp.Config{Logger: log}
	switch c.Tools {
	case "mcp-command":
		mc.Command = strings.Fields(c.MCPCommand)
	case "mcp-url":
		mc.URL = c.MCPURL
	}
	client, err := mcp.Dial(ctx, mc)
	if err != nil {
		return nil, &configError{c.Tools, err.Error()}
	}
	return client, nil
}

// modelFactory makes each session's model: the script's turns, or the one
// OpenAI-compatible client.
func modelFactory(c serveConfig, log *slog.Logger) (func(tenant, session string) (model.Model, error), error) {
	if c.Model == "scripted" {
		return func(string, string) (model.Model, error) { return scripted.New(c.script) }, nil
	}
	oc := c.model.config(c.BaseURL, c.apiKey, c.ModelName)
	oc.Logger = log
	m, err := openai.New(oc)
	if err != nil {
		return nil, &configError{"model", err.Error()}
	}
	return func(string, string) (model.Model, error) { return m, nil }, nil
}

// serverOptions are the server's options from c: the tenants of --keys,
// the skills, tools, model and spec settings, and with a durable store the
// sessions, generations and instances it keeps.
func serverOptions(ctx context.Context, c serveConfig, db *sqlstore.DB, provider tools.Provider,
	newModel func(tenant, session string) (model.Model, error), log *slog.Logger) server.Options {
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
		Capabilities:    grants,
		Limits:          c.Limits,
		Agents:          server.LoaderAgents{Loader: skillstore.NewLoader(skillstore.NewDirStore(c.Skills), log), Codes: codes},
		Tools:           provider,
		NewModel:        newModel,
		Loop:            c.spec.loop,
		RunTimeout:      c.RunTimeout,
		Logger:          log,
		Instance:        c.Instance,
		Lease:           c.Lease,
		PrepareDeadline: c.PrepareDeadline,
		Plugins:         c.Plugins,
	}
	opts.State, opts.AgentSettings, opts.Platform = c.spec.state, c.spec.agentSettings, c.spec.platform
	if db == nil {
		return opts
	}
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
	return opts
}

// firstPartyPlugins finds the first-party plugins, which run as wasm unless
// --native: from --plugins, else the embedded ones or those built from
// source, written out as a plugin directory under the cache. Only --plugins
// is watched. It sets the compiled code's cache, unless --plugin-cache did.
func firstPartyPlugins(ctx context.Context, c *serveConfig, opts *server.Options, log *slog.Logger, stderr io.Writer) error {
	if c.Native {
		opts.Guards, opts.Builtins = chain.NativeGuards(), loop.NativeBuiltins(time.Now)
		return nil
	}
	root, err := cacheRoot(c.CacheDir)
	if err != nil {
		return &configError{"cache-dir", err.Error()}
	}
	if c.PluginCache == "" {
		c.PluginCache = compiledDir(root)
	}
	if opts.Plugins != "" {
		return nil
	}
	set, err := firstPartySet(ctx, "", root, stderr)
	if err != nil {
		return &configError{"plugins", err.Error()}
	}
	if opts.Plugins, err = set.WriteDir(firstparty.Options{CacheDir: filepath.Join(root, "plugins")}); err != nil {
		return &configError{"cache-dir", err.Error()}
	}
	log.Info("first-party plugins", "from", set.String(), "digest", set.Digest())
	return nil
}

// observe sends trace events to the session's API stream and to the
// metrics, the log and (with a durable store and --feedback) the feedback
// records, and counts an OpenAI model's tokens and failures. srv is the
// server the plugin metrics read, once it exists; stopFeedback, when not
// nil, flushes the feedback records.
func observe(c serveConfig, db *sqlstore.DB, opts *server.Options, srv **server.Server, log *slog.Logger) (
	metrics *telemetry.Metrics, stopFeedback func(context.Context) error, err error) {
	metrics, err = telemetry.NewMetrics(telemetry.MetricsOptions{Runtime: true, Plugins: func() []telemetry.PluginSample {
		var out []telemetry.PluginSample
		for _, sl := range (*srv).Slots() {
			out = append(out, telemetry.SampleSlotGenerations(sl)...)
		}
		return out
	}, PluginTimeRefused: func() map[string]uint64 {
		if opts.Host == nil {
			return nil
		}
		return opts.Host.PluginTimeRefused()
	}, Compiles: func() host.CompileStats {
		if opts.Host == nil {
			return host.CompileStats{}
		}
		return opts.Host.CompileStats()
	}})
	if err != nil {
		return nil, nil, err
	}
	var feedbackSink func(tenant, session string) loop.Sink
	if db != nil && c.Feedback {
		if feedbackSink, stopFeedback, err = feedbackObserver(db, log); err != nil {
			return nil, nil, err
		}
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
	return metrics, stopFeedback, nil
}

// startServer loads and checks the plugins and skills, starts the server's
// sessions, follows the slots' generations in the store (writing their
// counters to it) and, with --watch-interval, watches --plugins;
// stopWatch ends them.
func startServer(ctx context.Context, c serveConfig, srv *server.Server, log *slog.Logger) (stopWatch func(), err error) {
	if err := selfTested(ctx, srv.LoadPlugins); err != nil {
		return nil, &configError{"plugins", err.Error()}
	}
	// The slots' desired generations in the store serve, not those just
	// loaded, when another instance (or this one before a restart)
	// installed them; afterwards this instance follows the store.
	if err := srv.SyncSlots(ctx); err != nil {
		return nil, &configError{"store", err.Error()}
	}
	logPlugins(log, srv.Slots(), c.Native)
	if err := srv.Check(ctx); err != nil {
		return nil, &configError{"skills", err.Error()}
	}
	if err := srv.Start(ctx); err != nil {
		return nil, &configError{"store", err.Error()}
	}
	fctx, stopFollow := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() { defer close(followed); srv.Follow(fctx) }()
	// The generations' counters reach the store every CountsFlush (and at
	// a swap, and at the server's Close).
	counted := make(chan struct{})
	go func() { defer close(counted); srv.KeepCounts(fctx) }()
	// Both stop before the server's Close: the watch first, then the
	// store's follow and the counters' writes.
	unfollow := func() { stopFollow(); <-followed; <-counted }
	if c.Plugins == "" || c.WatchInterval <= 0 {
		return unfollow, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := srv.Watch(wctx, c.WatchInterval); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("plugin directory watch stopped", "err", err)
		}
	}()
	return func() { cancel(); <-watched; unfollow() }, nil
}

// listen serves the API (and the metrics, on --metrics-addr if given) until
// ctx ends, then shuts down within the grace period; drained is false when
// runs were still in flight at its end.
func listen(ctx context.Context, c serveConfig, srv *server.Server, metrics *telemetry.Metrics, log *slog.Logger, stdout io.Writer) (drained bool, err error) {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return true, &configError{"addr", err.Error()}
	}
	if c.forwards() {
		if err := srv.Advertise(ctx, c.advertiseAddr(ln)); err != nil {
			ln.Close()
			return true, &configError{keyAdvertiseAddr, err.Error()}
		}
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
	errc := make(chan error, 2)
	if c.MetricsAddr == "" {
		mux.Handle("GET /metrics", srv.Operator(metrics.Handler()))
	} else {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			ln.Close()
			return true, &configError{"metrics-addr", err.Error()}
		}
		mm := http.NewServeMux()
		mm.Handle("GET /metrics", metrics.Handler())
		ms := &http.Server{Handler: mm, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- ms.Serve(mln) }()
		defer ms.Close()
		fmt.Fprintf(stdout, "warden: metrics on http://%s/metrics\n", mln.Addr())
	}
	mountConsole(mux, traceHTTP(metrics.Middleware(srv.Handler())))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "warden: serving on http://%s\n", ln.Addr())
	tenants := map[string]bool{}
	for _, t := range c.keys.Tenants {
		tenants[t.Tenant] = true
	}
	log.Info("serving", "addr", ln.Addr().String(), "tenants", len(tenants), "admin", len(c.keys.AdminKeys) > 0,
		"plugins", map[bool]string{false: "wasm", true: "native"}[c.Native], "store", string(c.storeDialect))

	select {
	case err := <-errc:
		return true, err
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", c.Grace.String())
	srv.SetReady(false)
	cancelBase()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return true, fmt.Errorf("shutdown: %w", err)
	}
	// Requests answer 202 and leave their runs going: those get what is
	// left of the grace period.
	drained = true
	if err := srv.Drain(sctx); err != nil {
		drained = false
		log.Warn("runs still in flight at the end of the grace period: the next start recovers them", "grace", c.Grace.String())
	}
	fmt.Fprintln(stdout, "warden: stopped")
	return drained, nil
}

// compileWorker is this binary as the host's compile worker: main runs it
// as one when host.CompileWorkerEnv is set.
func compileWorker() (*host.CompileWorker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("this executable, to run as the compile worker: %w", err)
	}
	return &host.CompileWorker{Path: exe, Args: []string{"compile-worker"}}, nil
}
