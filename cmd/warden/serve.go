package main

import (
	"bytes"
	"context"
	"encoding/json"
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

const serveUsage = `usage: warden serve --skills DIR --keys FILE --model scripted|openai --tools mcp-command|mcp-url [flags]

Serves the HTTP API. Every flag can also be set by its WARDEN_* environment
variable (--model-script is WARDEN_MODEL_SCRIPT); a flag wins over the
environment. Everything is checked once at start; an error names the flag.

  --addr HOST:PORT        listen address (default 127.0.0.1:8080)
  --skills DIR            skill store directory (contract DirStore)
  --keys FILE             JSON: {"tenants":[{"tenant":"acme","agent":"agent_code","keys":["..."]}],"admin_keys":["..."]}
  --model KIND            scripted or openai
  --model-script FILE     scripted turns (JSON or YAML), with --model scripted
  --base-url URL          with --model openai
  --model-name NAME       with --model openai
  --api-key-env VAR       environment variable holding the API key, with --model openai
  --tools KIND            mcp-command or mcp-url
  --mcp-command "CMD ARGS" the MCP server's command line, with --tools mcp-command
  --mcp-url URL           the MCP server's streamable HTTP endpoint, with --tools mcp-url
  --plugin-cache DIR      compiled plugin cache for the admin API (default: in memory)
  --store KIND            memory, sqlite:PATH or postgres:URL (default memory)
  --run-timeout D         bound on one task run (default 5m)
  --shutdown-grace D      time given to requests in flight on SIGTERM (default 10s)
`

// serveConfig is warden serve's whole configuration, read from flags and
// WARDEN_* variables and validated once.
type serveConfig struct {
	Addr        string
	Skills      string
	Keys        string
	Model       string
	ModelScript string
	BaseURL     string
	ModelName   string
	APIKeyEnv   string
	Tools       string
	MCPCommand  string
	MCPURL      string
	PluginCache string
	Store       string
	RunTimeout  time.Duration
	Grace       time.Duration

	// Read from the values above by validate.
	storeDialect sqlstore.Dialect // "" for memory
	storeDSN     string
	keys         keysFile
	script       []scripted.Turn
	apiKey       string
}

// keysFile maps API keys to tenants and their agents.
type keysFile struct {
	Tenants []struct {
		Tenant string   `json:"tenant"`
		Agent  string   `json:"agent"`
		Keys   []string `json:"keys"`
	} `json:"tenants"`
	AdminKeys []string `json:"admin_keys"`
}

// configError names the flag and the variable a bad value came from.
type configError struct {
	flag string
	msg  string
}

func (e *configError) Error() string {
	return fmt.Sprintf("--%s (%s): %s", e.flag, envName(e.flag), e.msg)
}

func envName(flag string) string {
	return "WARDEN_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// loadServeConfig parses args, fills what they leave unset from getenv,
// and validates the result.
func loadServeConfig(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage) }
	str := map[string]*string{
		"addr": &c.Addr, "skills": &c.Skills, "keys": &c.Keys, "model": &c.Model, "model-script": &c.ModelScript,
		"base-url": &c.BaseURL, "model-name": &c.ModelName, "api-key-env": &c.APIKeyEnv, "tools": &c.Tools,
		"mcp-command": &c.MCPCommand, "mcp-url": &c.MCPURL, "plugin-cache": &c.PluginCache,
		"store": &c.Store,
	}
	for name, p := range str {
		fs.StringVar(p, name, "", "")
	}
	durs := map[string]*time.Duration{"run-timeout": &c.RunTimeout, "shutdown-grace": &c.Grace}
	for name, p := range durs {
		fs.DurationVar(p, name, 0, "")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, p := range str {
		if v := getenv(envName(name)); !set[name] && v != "" {
			*p = v
		}
	}
	for name, p := range durs {
		if v := getenv(envName(name)); !set[name] && v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, &configError{name, fmt.Sprintf("%q is not a duration", v)}
			}
			*p = d
		}
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if !set["run-timeout"] && c.RunTimeout == 0 {
		c.RunTimeout = 5 * time.Minute
	}
	if !set["shutdown-grace"] && c.Grace == 0 {
		c.Grace = 10 * time.Second
	}
	return c, c.validate(getenv)
}

func (c *serveConfig) validate(getenv func(string) string) error {
	bad := func(flag, format string, a ...any) error { return &configError{flag, fmt.Sprintf(format, a...)} }
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return bad("addr", "%q is not HOST:PORT", c.Addr)
	}
	if c.Skills == "" {
		return bad("skills", "required")
	}
	if fi, err := os.Stat(c.Skills); err != nil || !fi.IsDir() {
		return bad("skills", "%q is not a directory", c.Skills)
	}
	if c.Keys == "" {
		return bad("keys", "required")
	}
	if err := c.readKeys(); err != nil {
		return bad("keys", "%v", err)
	}
	switch c.Model {
	case "scripted":
		if c.ModelScript == "" {
			return bad("model-script", "required with --model scripted")
		}
		b, err := os.ReadFile(c.ModelScript)
		if err != nil {
			return bad("model-script", "%v", err)
		}
		if c.script, err = scripted.Parse(b); err != nil {
			return bad("model-script", "%v", err)
		}
	case "openai":
		if c.BaseURL == "" {
			return bad("base-url", "required with --model openai")
		}
		if c.ModelName == "" {
			return bad("model-name", "required with --model openai")
		}
		if c.APIKeyEnv != "" {
			if c.apiKey = getenv(c.APIKeyEnv); c.apiKey == "" {
				return bad("api-key-env", "%s is empty", c.APIKeyEnv)
			}
		}
	case "":
		return bad("model", "required: scripted or openai")
	default:
		return bad("model", "%q is not scripted or openai", c.Model)
	}
	switch c.Tools {
	case "mcp-command":
		if len(strings.Fields(c.MCPCommand)) == 0 {
			return bad("mcp-command", "required with --tools mcp-command")
		}
	case "mcp-url":
		if !strings.HasPrefix(c.MCPURL, "http://") && !strings.HasPrefix(c.MCPURL, "https://") {
			return bad("mcp-url", "%q is not an http(s) URL", c.MCPURL)
		}
	case "":
		return bad("tools", "required: mcp-command or mcp-url")
	default:
		return bad("tools", "%q is not mcp-command or mcp-url", c.Tools)
	}
	switch scheme, rest, _ := strings.Cut(c.Store, ":"); {
	case c.Store == "" || c.Store == "memory":
		c.Store, c.storeDialect, c.storeDSN = "memory", "", ""
	case scheme == "sqlite" && rest != "":
		c.storeDialect, c.storeDSN = sqlstore.SQLite, rest
	case scheme == "postgres" && rest != "":
		// The URL keeps its scheme: postgres:postgres://u@h/db.
		c.storeDialect, c.storeDSN = sqlstore.Postgres, rest
	case scheme == "sqlite" || scheme == "postgres":
		return bad("store", "%q has no %s after %s:", c.Store, map[string]string{"sqlite": "PATH", "postgres": "URL"}[scheme], scheme)
	default:
		return bad("store", "%q is not memory, sqlite:PATH or postgres:URL", c.Store)
	}
	if c.RunTimeout <= 0 {
		return bad("run-timeout", "must be positive")
	}
	if c.Grace <= 0 {
		return bad("shutdown-grace", "must be positive")
	}
	return nil
}

func (c *serveConfig) readKeys() error {
	b, err := os.ReadFile(c.Keys)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.keys); err != nil {
		return fmt.Errorf("%s: %w", c.Keys, err)
	}
	if len(c.keys.Tenants) == 0 {
		return fmt.Errorf("%s: no tenants", c.Keys)
	}
	seen := map[string]bool{}
	for i, t := range c.keys.Tenants {
		if t.Tenant == "" || t.Agent == "" || len(t.Keys) == 0 {
			return fmt.Errorf("%s: tenants[%d] needs tenant, agent and keys", c.Keys, i)
		}
		for _, k := range t.Keys {
			if len(k) < 16 || seen[k] {
				return fmt.Errorf("%s: tenants[%d]: a key is shorter than 16 characters or used twice", c.Keys, i)
			}
			seen[k] = true
		}
	}
	for _, k := range c.keys.AdminKeys {
		if len(k) < 16 || seen[k] {
			return fmt.Errorf("%s: admin_keys: a key is shorter than 16 characters or used twice", c.Keys)
		}
		seen[k] = true
	}
	return nil
}

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
