package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/agentwarden/warden/model/scripted"
	"github.com/agentwarden/warden/store/sqlstore"
)

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

	// Plugins is a directory of first-party wasm modules (argpolicy.wasm,
	// writegate.wasm, …, control.wasm, node.wasm, env.wasm); empty runs
	// them in-process. Watch polls it for new generations every
	// WatchInterval (0: not watched).
	Plugins       string
	WatchInterval time.Duration
	// Instance names this process among the instances sharing a store;
	// Lease is how long its claim on its sessions lasts without renewal.
	Instance string
	Lease    time.Duration
	// LogLevel is debug, info, warn or error; Trace is where OpenTelemetry
	// spans go: none, or stdout:FILE (JSON lines).
	LogLevel string
	Trace    string
	// Feedback records failed and retried calls in the store
	// (TOOL_USE_RELIABILITY §4); on by default with a durable store.
	Feedback bool

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
		"store": &c.Store, "plugins": &c.Plugins, "instance": &c.Instance, "log-level": &c.LogLevel, "trace": &c.Trace,
	}
	for name, p := range str {
		fs.StringVar(p, name, "", "")
	}
	durs := map[string]*time.Duration{"run-timeout": &c.RunTimeout, "shutdown-grace": &c.Grace,
		"watch-interval": &c.WatchInterval, "lease": &c.Lease}
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
	if c.Lease == 0 {
		c.Lease = 15 * time.Second
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Trace == "" {
		c.Trace = "none"
	}
	c.Feedback = c.Store != "" && c.Store != "memory"
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

