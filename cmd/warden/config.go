package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

const serveUsage = `usage: warden serve [--config FILE] --skills DIR --keys FILE --model scripted|openai --tools mcp-command|mcp-url|mcp-servers [flags]

Serves the HTTP API. Every key below can come from a config file, the
environment or a flag; the first of these that sets it wins:

  1. the flag:                  --run-timeout 30s
  2. its WARDEN_* variable:     WARDEN_RUN_TIMEOUT=30s
     (dashes become underscores: --model-script is WARDEN_MODEL_SCRIPT)
  3. the config file named by --config FILE or WARDEN_CONFIG:  run-timeout: 30s
     (YAML, JSON or TOML by its extension .yaml, .yml, .json or .toml; the
     same kebab-case keys; an unknown key or a value of the wrong type is an
     error)
  4. the default.

An empty value counts as unset. Relative paths, in the file too, are relative
to the working directory. Everything is checked once at start; an error names
the key, and the file when the value came from it.

  --config FILE           config file (YAML, JSON or TOML); not a key of the file
  --addr HOST:PORT        listen address (default 127.0.0.1:8080)
  --skills DIR            skill store directory (contract DirStore)
  --keys FILE             JSON: {"tenants":[{"tenant":"acme","agent":"agent_code","keys":["..."],
                          "gateway_keys":["..."]}],"admin_keys":["..."],"metrics_keys":["..."]}; a tenant's
                          "capabilities":["clock",...] are what its own plugins may be granted (none when absent)
  --model KIND            scripted or openai
  --model-script FILE     scripted turns (JSON or YAML), with --model scripted
  --base-url URL          with --model openai
  --model-name NAME       with --model openai
  --api-key-env VAR       environment variable holding the API key, with --model openai
  --model-attempt-timeout D  with --model openai: bound on one HTTP attempt (default 1m)
  --model-call-timeout D  bound on one model turn, retries and waits included (default 3m)
  --model-max-retries N   retries of a 429, 5xx, timeout or network failure, 0 to 10 (default 3)
  --model-backoff D       wait before the first retry, doubled per retry (default 1s)
  --model-max-backoff D   longest wait between retries (default 30s)
  --model-stream[=BOOL]   ask for replies as server-sent events (default false)
  --model-strict[=BOOL]   send tools with "strict": true where the schema allows (default true)
  --model-parallel-tool-calls[=BOOL]  send parallel_tool_calls (default: the provider's)
  --model-tool-choice MODE  auto, none or required (default: the provider's)
  --tools KIND            mcp-command, mcp-url (one server) or mcp-servers (a list)
  --mcp-command "CMD ARGS" the MCP server's command line, with --tools mcp-command
  --mcp-url URL           the MCP server's streamable HTTP endpoint, with --tools mcp-url
  --mcp-servers LIST      with --tools mcp-servers: the agent's MCP servers, a list in the
                          config file (a JSON array in the flag or variable), each with
                          name, command (argv list) or url, and optionally env-allow,
                          env (KEY=VALUE list), dir, headers, bearer-token-env,
                          bearer-token-file, connect-timeout, call-timeout, roots
  --plugin-cache DIR      compiled plugin cache (default: compiled/ under --cache-dir; in memory
                          with --native)
  --compile-worker[=BOOL] compile a module this process has never compiled in a separate
                          low-priority process (this binary), into --plugin-cache, so that
                          its compile does not slow the calls in flight (default true; false
                          with --native unless --plugin-cache is set)
  --store KIND            memory, sqlite:PATH or postgres:URL (default memory)
  --run-timeout D         bound on one task run (default 5m)
  --shutdown-grace D      time given to requests in flight on SIGTERM (default 10s)
  --plugins DIR           directory of first-party wasm plugins (default: those embedded in the
                          binary by make build, else built once from the source tree into
                          plugins/ under --cache-dir)
  --native[=BOOL]         run the first-party plugins in-process, for debugging and benchmarks
                          (default false: they run as wasm)
  --cache-dir DIR         where built plugins and compiled code are kept (default: warden/ in
                          the user cache directory)
  --watch-interval D      poll --plugins for new generations this often (default 0: not watched)
  --instance NAME         this instance among those sharing a store (default HOST-PID);
                          [A-Za-z0-9] then up to 63 of [A-Za-z0-9_.:-]
  --lease D               how long this instance's claim on its sessions lasts
                          without renewal (default 15s, at least 1s)
  --prepare-deadline D    how long the live instances have to prepare a plugin generation
                          installed on any of them; one that has not answered by then
                          refuses it for all (default 2m, at least 1s)
  --idle-timeout D        close a session in memory after this long without a request;
                          the store keeps it (default 30m, at least 1m, with a durable store)
  --log-level LEVEL       debug, info, warn or error (default info)
  --trace WHERE           OpenTelemetry spans: none, stdout:FILE for JSON lines, or otlp:URL
                          for a collector's OTLP/HTTP traces endpoint (default none)
  --feedback[=BOOL]       record every tool call's reliability record in the store (default true
                          with a sqlite: or postgres: store, false with memory)
  --metrics-addr HOST:PORT  serve GET /metrics here, without a key, and not on --addr (default:
                          on --addr, for an admin key or a metrics key of --keys only)
  --tenant-rate N         each tenant's API requests per second, a token bucket (default 10)
  --tenant-burst N        requests a tenant may send at once above its rate (default 20)
  --tenant-max-sessions N a tenant's sessions open on this instance (default 100)
  --tenant-max-runs N     a tenant's runs in flight: messages, answers, approvals, verifies,
                          resumes (default 4)
  --tenant-max-tool-calls N  a tenant's business tool calls in flight; more wait (default 8)
  --tenant-plugin-time D  plugin time a tenant's guard and builtin calls may use a second, a
                          token bucket; a call beyond it is not started (default 1s)
  --tenant-plugin-burst D plugin time a tenant may use at once above it (default 2s)
                          Each tenant-* limit is per instance; 0 turns it off.
  --plugin-instance-idle D  close a tenant's plugin instance idle for this long (default 2m;
                          0 keeps them)
  --plugin-max-instances N  plugin instances alive at once in this process, across tenants and
                          plugins; the least recently used idle ones are closed to start
                          another (default 256; 0: no bound)
  --plugin-max-instance-bytes SIZE  linear memory those instances may hold: bytes, KiB, MiB or
                          GiB (default a sixteenth of the machine's memory, 128MiB to 384MiB;
                          0: no bound)

Forwarding between instances (with a postgres: store): a request for a session another
live instance serves is sent to that instance and its answer relayed, so that any
instance answers any request.

  --advertise-addr HOST:PORT  where the other instances reach this one (default: --addr,
                          with the port it got; required when --addr is a wildcard)
  --forward[=BOOL]        forward requests to their session's instance (default true); false
                          answers 409 session_elsewhere naming it instead
  --forward-secret SECRET the secret every instance shares, at least 32 bytes, that signs each
                          forwarded request (required while forwarding); refused as a flag,
                          which the process list shows: WARDEN_FORWARD_SECRET or the file only
  --forward-timeout D     bound on one forwarded request, an event stream's excepted
                          (default 0: --run-timeout plus 30s)

The spec's settings (CONTRACT_SPEC), for every agent unless --agents says otherwise:

  --write-confirm-bypass-tools LIST  state.write-confirm-bypass-tools: writes whose contract
                          says confirm: false that run without approval; both are needed
                          (a list in the config file, a JSON array in the flag or variable)
  --reconfirm-after D     state.reconfirm-after: a CONFIRM later than this after the approval
                          was asked is asked again (default 24h)
  --delegate-max-depth N  state.delegate-max-depth: how deep delegation goes, at least 1
                          (default 2)
  --fingerprint-limit N   identical successful calls before FINGERPRINT_TRIP, at least 1
                          (default 3)
  --repeat-tools LIST     tools that may repeat with the same arguments
  --locale LOCALE         language of every model-facing text: zh (zh-CN) or en (default zh-CN)
  --no-progress-limit N   no-progress turns in a row that fail a node, at least 1 (default 5)
  --max-rounds N          model turns a node may take, at least 1 (default 20)
  --agents LIST           per agent: a list of {agent: AGENT_CODE, and any of the eight keys
                          above}; the keys an item gives replace the defaults for that
                          agent's sessions

The login identity (platform.*, CONTRACT_SPEC §11) of a message comes from a trusted
gateway: a key listed in gateway_keys of its tenant in --keys. Only such a key may send
these headers; the same headers with any other key are refused (403 platform_untrusted).
userId, memberId and organId are integers; the others text.

  --platform-header-user-id NAME     header of platform.userId (default X-Platform-User-Id)
  --platform-header-member-id NAME   (default X-Platform-Member-Id)
  --platform-header-name NAME        (default X-Platform-Name)
  --platform-header-organ-id NAME    (default X-Platform-Organ-Id)
  --platform-header-organ-name NAME  (default X-Platform-Organ-Name)
  --platform-header-organ-type NAME  (default X-Platform-Organ-Type)
  --platform-header-dept-path NAME   (default X-Platform-Dept-Path)
  --platform-hidden LIST  platform.hidden: identity fields never passed to a node (default
                          passportId, clientId, sessionType, adminUser, adminCompany, which
                          stay hidden; open fields may be added, and then have no header)
`

// serveConfig is warden serve's whole configuration, read from flags,
// WARDEN_* variables and a config file, and validated once.
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
	// MCPServers is the mcp-servers list as JSON, checked into mcpServers.
	MCPServers  json.RawMessage
	PluginCache string
	Store       string
	RunTimeout  time.Duration
	Grace       time.Duration
	// CompileWorker compiles never-seen modules in a worker process
	// (host.CompileWorker); its default depends on --native.
	CompileWorker bool

	// Plugins is a directory of first-party wasm modules (argpolicy.wasm,
	// writegate.wasm, …, control.wasm, node.wasm, env.wasm); empty takes
	// the embedded ones, else builds them from source into CacheDir.
	// Watch polls it for new generations every WatchInterval (0: not
	// watched). Native runs them in-process instead.
	Plugins       string
	WatchInterval time.Duration
	Native        bool
	// CacheDir holds the plugins built from source and, unless
	// PluginCache says otherwise, compiled code; empty is warden/ in the
	// user cache directory.
	CacheDir string
	// Instance names this process among the instances sharing a store;
	// Lease is how long its claim on its sessions lasts without renewal.
	Instance string
	Lease    time.Duration
	// PrepareDeadline is how long the live instances have to prepare a
	// slot's candidate (server.Options.PrepareDeadline).
	PrepareDeadline time.Duration
	// IdleTimeout closes a session no request used for that long (its
	// state stays in the store).
	IdleTimeout time.Duration
	// LogLevel is debug, info, warn or error; Trace is where OpenTelemetry
	// spans go: none, stdout:FILE (JSON lines) or otlp:URL.
	LogLevel string
	Trace    string
	// Feedback records every tool call's reliability record in the store
	// (TOOL_USE_RELIABILITY §4); on by default with a durable store.
	Feedback bool
	// MetricsAddr, when set, is where GET /metrics is served (without a
	// key) instead of on Addr (with an admin or metrics key).
	MetricsAddr string
	// Limits are each tenant's, on this instance (the tenant-* keys).
	Limits server.Limits
	// PluginTime and PluginBurst are each tenant's plugin time budget on
	// this instance (host.Options.PluginTime and PluginBurst).
	PluginTime, PluginBurst time.Duration
	// instances are the plugin instance keys (instanceconfig.go).
	instances instanceKeys

	// spec holds the spec's settings and the platform identity's keys.
	spec specKeys
	// forward holds the forwarding keys (forwardconfig.go).
	forward forwardKeys

	// model holds the model-* keys of --model openai; modelParallel is
	// model-parallel-tool-calls, sent only when a source sets it.
	model         modelKeys
	modelParallel bool

	// Read from the values above by validate.
	storeDialect sqlstore.Dialect // "" for memory
	storeDSN     string
	keys         keysFile
	script       []scripted.Turn
	apiKey       string
	mcpServers   []mcp.Config

	// Where each key's value came from, for error messages; file is the
	// config file's name as given.
	origins map[string]origin
	file    string
}

// keysFile maps API keys to tenants and their agents.
type keysFile struct {
	Tenants   []tenantKeys `json:"tenants"`
	AdminKeys []string     `json:"admin_keys"`
	// MetricsKeys reach GET /metrics only.
	MetricsKeys []string `json:"metrics_keys"`
}

// tenantKeys are one tenant's entry of the keys file.
type tenantKeys struct {
	Tenant string   `json:"tenant"`
	Agent  string   `json:"agent"`
	Keys   []string `json:"keys"`
	// GatewayKeys are more keys of the tenant, each a trusted
	// gateway's: they may pass the login identity (platform-header-*).
	GatewayKeys []string `json:"gateway_keys"`
	// Capabilities the tenant's own plugins may be granted (none when
	// absent): a module asking for more is refused at install.
	Capabilities []abi.Capability `json:"capabilities"`
}

// configError names the flag and the variable a bad value came from.
type configError struct {
	flag string
	msg  string
}

func (e *configError) Error() string {
	return fmt.Sprintf("--%s (%s): %s", e.flag, envName(e.flag), e.msg)
}

// envName is the WARDEN_* variable of a key: WARDEN_ and the key
// upper-cased, dashes made underscores.
func envName(flag string) string {
	return "WARDEN_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// origin is where a key's value came from.
type origin int

const (
	fromDefault origin = iota
	fromFlag
	fromEnv
	fromFile
)

// configKey is the key that names the config file; it is a flag and a
// variable, never a key of the file itself.
const configKey = "config"

// instanceName is what --instance must match: it is written into the store
// as the owner of sessions and into logs, so it stays short and plain.
var instanceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

// setting is one key and the field it fills; exactly one of the pointers is
// set, and it gives the key its type.
type setting struct {
	name    string
	str     *string
	dur     *time.Duration
	boolean *bool
	integer *int
	float   *float64
	list    *json.RawMessage
}

// settings lists every key in usage order, which is also the order in
// which their values are read and type-checked.
func (c *serveConfig) settings() []setting {
	return append([]setting{
		{name: "addr", str: &c.Addr},
		{name: "skills", str: &c.Skills},
		{name: "keys", str: &c.Keys},
		{name: "model", str: &c.Model},
		{name: "model-script", str: &c.ModelScript},
		{name: "base-url", str: &c.BaseURL},
		{name: "model-name", str: &c.ModelName},
		{name: "api-key-env", str: &c.APIKeyEnv},
		{name: keyAttemptTimeout, dur: &c.model.AttemptTimeout},
		{name: keyCallTimeout, dur: &c.model.CallTimeout},
		{name: keyMaxRetries, integer: &c.model.MaxRetries},
		{name: keyBackoff, dur: &c.model.Backoff},
		{name: keyMaxBackoff, dur: &c.model.MaxBackoff},
		{name: keyStream, boolean: &c.model.Stream},
		{name: keyStrict, boolean: &c.model.Strict},
		{name: keyParallel, boolean: &c.modelParallel},
		{name: keyToolChoice, str: &c.model.ToolChoice},
		{name: "tools", str: &c.Tools},
		{name: "mcp-command", str: &c.MCPCommand},
		{name: "mcp-url", str: &c.MCPURL},
		{name: "mcp-servers", list: &c.MCPServers},
		{name: "plugin-cache", str: &c.PluginCache},
		{name: "compile-worker", boolean: &c.CompileWorker},
		{name: "store", str: &c.Store},
		{name: "run-timeout", dur: &c.RunTimeout},
		{name: "shutdown-grace", dur: &c.Grace},
		{name: "plugins", str: &c.Plugins},
		{name: "watch-interval", dur: &c.WatchInterval},
		{name: "native", boolean: &c.Native},
		{name: "cache-dir", str: &c.CacheDir},
		{name: "instance", str: &c.Instance},
		{name: "lease", dur: &c.Lease},
		{name: "prepare-deadline", dur: &c.PrepareDeadline},
		{name: "idle-timeout", dur: &c.IdleTimeout},
		{name: "log-level", str: &c.LogLevel},
		{name: "trace", str: &c.Trace},
		{name: "feedback", boolean: &c.Feedback},
		{name: "metrics-addr", str: &c.MetricsAddr},
		{name: "tenant-rate", float: &c.Limits.Rate},
		{name: "tenant-burst", integer: &c.Limits.Burst},
		{name: "tenant-max-sessions", integer: &c.Limits.MaxSessions},
		{name: "tenant-max-runs", integer: &c.Limits.MaxRuns},
		{name: "tenant-max-tool-calls", integer: &c.Limits.MaxToolCalls},
		{name: "tenant-plugin-time", dur: &c.PluginTime},
		{name: "tenant-plugin-burst", dur: &c.PluginBurst},
	}, append(append(c.instanceSettings(), c.specSettings()...), c.forwardSettings()...)...)
}

// loadServeConfig reads every key from args, getenv and the config file
// (--config or WARDEN_CONFIG), the first of them that sets a key winning,
// and validates the result. -h and --help print the usage and return
// flag.ErrHelp.
//
// Viper (its own instance) reads the file. The layering is done here,
// in lookup, rather than by viper's flag and environment bindings, for two
// reasons: viper reads the process environment itself, while serve takes
// getenv so that tests and --api-key-env see one environment; and every
// type error must say which source the bad value came from, which viper
// does not report.
func loadServeConfig(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	c := serveConfig{origins: map[string]origin{}}
	fs, err := parseServeFlags(args, c.settings())
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, serveUsage)
	}
	if err != nil {
		return c, err
	}

	file, err := readConfigFile(fs, getenv)
	if err != nil {
		return c, err
	}
	if file != nil {
		c.file = file.ConfigFileUsed()
	}

	host, err := os.Hostname()
	if err != nil {
		host = "warden"
	}
	c.Addr = "127.0.0.1:8080"
	c.RunTimeout = 5 * time.Minute
	c.Grace = 10 * time.Second
	c.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	c.Lease = 15 * time.Second
	c.PrepareDeadline = server.DefaultPrepareDeadline
	c.IdleTimeout = 30 * time.Minute
	c.LogLevel = "info"
	c.Trace = "none"
	c.model = defaultModelKeys()
	c.Limits = server.DefaultLimits()
	c.PluginTime, c.PluginBurst = time.Second, 2*time.Second
	c.spec = defaultSpecKeys()
	c.forward = defaultForwardKeys()
	c.instances = defaultInstanceKeys()
	// Feedback's default depends on the store; validate sets it.

	// Every value a source sets must have its key's type, even where a
	// higher source overrides it: a broken file or variable fails today,
	// not on the day the flag that hid it is dropped. Values are assigned
	// lowest source first, so the highest is the one that stays.
	for _, s := range c.settings() {
		for _, v := range slices.Backward(lookup(s.name, fs, getenv, file)) {
			c.origins[s.name] = v.from
			if err := s.assign(v.raw, v.from); err != nil {
				return c, &configError{s.name, c.where(s.name) + ": " + err.Error()}
			}
		}
	}
	return c, c.validate(getenv)
}

// serveFlags are the flags warden serve was given, by key.
type serveFlags map[string]string

// parseServeFlags parses serve's command line: a flag per key, and
// --config. Every flag is a string here: values are converted and checked
// in one place for all three sources, with one set of messages. A bool
// key's flag alone means true (--feedback).
func parseServeFlags(args []string, settings []setting) (serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	given := serveFlags{}
	fs.Var(flagValue{given, configKey, false}, configKey, "")
	for _, s := range settings {
		fs.Var(flagValue{given, s.name, s.boolean != nil}, s.name, "")
	}
	if err := fs.Parse(args); err != nil {
		// The flags named as --help lists them.
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			return nil, fmt.Errorf("unknown flag: -%s", name)
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag needs an argument: "); ok {
			return nil, fmt.Errorf("flag needs an argument: -%s", name)
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return given, nil
}

// flagValue records a serve flag's text in given.
type flagValue struct {
	given   serveFlags
	name    string
	boolean bool
}

func (v flagValue) String() string {
	if v.given == nil {
		return ""
	}
	return v.given[v.name]
}

func (v flagValue) Set(s string) error { v.given[v.name] = s; return nil }

func (v flagValue) IsBoolFlag() bool { return v.boolean }

// readConfigFile reads the file --config or WARDEN_CONFIG names, if any,
// and refuses a key it does not know: a misspelt key must not be ignored.
func readConfigFile(fs serveFlags, getenv func(string) string) (*viper.Viper, error) {
	vs := lookup(configKey, fs, getenv, nil)
	if len(vs) == 0 {
		return nil, nil
	}
	path := vs[0].raw.(string)
	bad := func(format string, a ...any) error { return &configError{configKey, fmt.Sprintf(format, a...)} }
	if ext := filepath.Ext(path); !slices.Contains([]string{".yaml", ".yml", ".json", ".toml"}, ext) {
		return nil, bad("%q is not a .yaml, .yml, .json or .toml file", path)
	}
	// Keys twice or in another case first: viper would fold them into one.
	if b, err := os.ReadFile(path); err == nil {
		if err := checkConfigKeys(path, b); err != nil {
			return nil, bad("%s: %v", path, err)
		}
	}
	v := viper.New()
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		if errors.As(err, new(viper.ConfigParseError)) {
			return nil, bad("%s: %v", path, errors.Unwrap(err))
		}
		return nil, bad("%v", err)
	}
	known := map[string]bool{}
	for _, s := range (&serveConfig{}).settings() {
		known[s.name] = true
	}
	var unknown []string
	for _, k := range v.AllKeys() {
		// A nested key (a.b) is reported by its top-level name.
		top, _, _ := strings.Cut(k, ".")
		if !known[top] && !slices.Contains(unknown, top) {
			unknown = append(unknown, top)
		}
	}
	slices.Sort(unknown)
	switch {
	case slices.Contains(unknown, configKey):
		return nil, bad("%s: key %q cannot be set in a config file", path, configKey)
	case len(unknown) == 1:
		return nil, bad("%s: unknown key %q", path, unknown[0])
	case len(unknown) > 1:
		return nil, bad("%s: unknown keys %s", path, quoteAll(unknown))
	}
	return v, nil
}

// value is one source's value for a key.
type value struct {
	raw  any
	from origin
}

// lookup returns the values the sources set for key, the winner first: the
// flag if given, the WARDEN_* variable, the config file. An empty value
// counts as unset; a key no source sets gives none.
func lookup(key string, fs serveFlags, getenv func(string) string, file *viper.Viper) []value {
	var vs []value
	if f := fs[key]; f != "" {
		vs = append(vs, value{f, fromFlag})
	}
	if v := getenv(envName(key)); v != "" {
		vs = append(vs, value{v, fromEnv})
	}
	if file != nil {
		if v := file.Get(key); v != nil && v != "" {
			vs = append(vs, value{v, fromFile})
		}
	}
	return vs
}

// assign converts raw, from o, to the setting's type. Flags and variables
// are text; a file's values must already have the key's type (a duration
// is a string such as "30s", a bool is a bool).
func (s setting) assign(raw any, o origin) error {
	text, isText := raw.(string)
	switch {
	case s.str != nil:
		if !isText {
			return fmt.Errorf("%s is not a string", show(raw))
		}
		*s.str = text
	case s.dur != nil:
		d, err := time.ParseDuration(text)
		if !isText || err != nil {
			return fmt.Errorf("%s is not a duration", show(raw))
		}
		*s.dur = d
	case s.boolean != nil:
		b, isBool := raw.(bool)
		if isText && o != fromFile {
			var err error
			b, err = strconv.ParseBool(text)
			isBool = err == nil
		}
		if !isBool {
			return fmt.Errorf("%s is not a bool", show(raw))
		}
		*s.boolean = b
	case s.integer != nil:
		n, err := strconv.Atoi(text)
		if !isText {
			n, err = fileInt(raw)
		}
		if err != nil {
			return fmt.Errorf("%s is not an integer", show(raw))
		}
		*s.integer = n
	case s.float != nil:
		f, err := strconv.ParseFloat(text, 64)
		if !isText {
			var n int
			if n, err = fileInt(raw); err == nil {
				f = float64(n)
			} else if v, ok := raw.(float64); ok {
				f, err = v, nil
			}
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is not a number", show(raw))
		}
		*s.float = f
	case s.list != nil:
		// A file gives the list itself; a flag or variable its JSON.
		b := []byte(text)
		if !isText || o == fromFile {
			var err error
			if b, err = json.Marshal(raw); err != nil {
				return notAList(nil)
			}
		}
		var items []json.RawMessage
		if json.Unmarshal(b, &items) != nil {
			return notAList(b) // its type only: the value may hold secrets
		}
		*s.list = b
	}
	return nil
}

// where says where key's value came from, as a user would find it.
func (c *serveConfig) where(key string) string {
	switch c.origins[key] {
	case fromFlag:
		return "flag --" + key
	case fromEnv:
		return "env " + envName(key)
	case fromFile:
		return "file " + c.file + " key " + key
	}
	return "default"
}

// badValue makes the error of a key's bad value.
type badValue func(key, format string, a ...any) error

// validate checks every key, and the files and variables they name, once
// at start; the first error found is returned.
func (c *serveConfig) validate(getenv func(string) string) error {
	bad := func(key, format string, a ...any) error {
		msg := fmt.Sprintf(format, a...)
		if c.origins[key] == fromFile {
			msg = c.where(key) + ": " + msg
		}
		return &configError{key, msg}
	}
	if err := c.validateFiles(bad); err != nil {
		return err
	}
	if err := c.validateModel(bad, getenv); err != nil {
		return err
	}
	if err := c.validateTools(bad, getenv); err != nil {
		return err
	}
	if err := c.validateStore(bad); err != nil {
		return err
	}
	if err := c.validateRuntime(bad); err != nil {
		return err
	}
	if err := c.validateTelemetry(bad); err != nil {
		return err
	}
	if err := c.validateLimits(bad); err != nil {
		return err
	}
	if err := c.validateInstances(bad); err != nil {
		return err
	}
	if err := c.validateForward(bad); err != nil {
		return err
	}
	return c.validateSpec(bad)
}

// validateFiles checks the listen address, the skill store and the keys
// file, which it reads.
func (c *serveConfig) validateFiles(bad badValue) error {
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
	return nil
}

// validateModel checks --model and its keys, and reads the script or the
// API key.
func (c *serveConfig) validateModel(bad badValue, getenv func(string) string) error {
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
		if c.origins[keyParallel] != fromDefault {
			c.model.Parallel = &c.modelParallel
		}
		if err := c.model.validate(); err != nil {
			return bad(err.key, "%s", err.msg)
		}
	case "":
		return bad("model", "required: scripted or openai")
	default:
		return bad("model", "%q is not scripted or openai", c.Model)
	}
	return nil
}

// validateTools checks --tools and its keys.
func (c *serveConfig) validateTools(bad badValue, getenv func(string) string) error {
	switch c.Tools {
	case "mcp-command":
		if len(strings.Fields(c.MCPCommand)) == 0 {
			return bad("mcp-command", "required with --tools mcp-command")
		}
	case "mcp-url":
		if !strings.HasPrefix(c.MCPURL, "http://") && !strings.HasPrefix(c.MCPURL, "https://") {
			return bad("mcp-url", "%q is not an http(s) URL", c.MCPURL)
		}
	case "mcp-servers":
		if err := c.readMCPServers(getenv); err != nil {
			return bad("mcp-servers", "%v", err)
		}
	case "":
		return bad("tools", "required: mcp-command, mcp-url or mcp-servers")
	default:
		return bad("tools", "%q is not mcp-command, mcp-url or mcp-servers", c.Tools)
	}
	return nil
}

// validateStore checks --store and splits it into dialect and DSN.
func (c *serveConfig) validateStore(bad badValue) error {
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
	return nil
}

// validateRuntime checks the timeouts, the plugin keys and the instance's
// name, lease and idle timeout.
func (c *serveConfig) validateRuntime(bad badValue) error {
	if c.RunTimeout <= 0 {
		return bad("run-timeout", "must be positive")
	}
	if c.Grace <= 0 {
		return bad("shutdown-grace", "must be positive")
	}
	if c.Plugins != "" {
		if fi, err := os.Stat(c.Plugins); err != nil || !fi.IsDir() {
			return bad("plugins", "%q is not a directory", c.Plugins)
		}
	}
	if c.WatchInterval < 0 {
		return bad("watch-interval", "must not be negative")
	}
	if c.WatchInterval > 0 && c.Plugins == "" {
		return bad("watch-interval", "needs --plugins")
	}
	if c.Native && c.Plugins != "" {
		return bad("native", "runs the first-party plugins in-process; --plugins runs them as wasm: drop one")
	}
	if !instanceName.MatchString(c.Instance) {
		return bad("instance", "%q does not match %s", c.Instance, instanceName)
	}
	if c.Lease < time.Second {
		return bad("lease", "%s is shorter than 1s", c.Lease)
	}
	if c.PrepareDeadline < time.Second {
		return bad("prepare-deadline", "%s is shorter than 1s", c.PrepareDeadline)
	}
	if c.IdleTimeout < time.Minute {
		return bad("idle-timeout", "%s is shorter than 1m", c.IdleTimeout)
	}
	return nil
}

// validateTelemetry checks the log level, --trace and --metrics-addr.
func (c *serveConfig) validateTelemetry(bad badValue) error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log-level", "%q is not debug, info, warn or error", c.LogLevel)
	}
	switch scheme, rest, _ := strings.Cut(c.Trace, ":"); {
	case c.Trace == "none":
	case scheme == "stdout" && rest != "":
	case scheme == "stdout":
		return bad("trace", "%q has no FILE after stdout:", c.Trace)
	case scheme == "otlp":
		if u, err := url.Parse(rest); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("trace", "%q has no http(s) URL after otlp:", c.Trace)
		}
	default:
		return bad("trace", "%q is not none, stdout:FILE or otlp:URL", c.Trace)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return bad("metrics-addr", "%q is not HOST:PORT", c.MetricsAddr)
		}
		if c.MetricsAddr == c.Addr {
			return bad("metrics-addr", "%q is --addr too; give the metrics an address of their own", c.MetricsAddr)
		}
	}
	return nil
}

// validateLimits checks the tenant-* limits and --feedback, whose default
// depends on the store.
func (c *serveConfig) validateLimits(bad badValue) error {
	for _, l := range []struct {
		key string
		neg bool
	}{{"tenant-rate", c.Limits.Rate < 0}, {"tenant-burst", c.Limits.Burst < 0}, {"tenant-max-sessions", c.Limits.MaxSessions < 0},
		{"tenant-max-runs", c.Limits.MaxRuns < 0}, {"tenant-max-tool-calls", c.Limits.MaxToolCalls < 0},
		{"tenant-plugin-time", c.PluginTime < 0}, {"tenant-plugin-burst", c.PluginBurst < 0}} {
		if l.neg {
			return bad(l.key, "must not be negative (0 turns the limit off)")
		}
	}
	if c.Limits.Rate > 0 && c.Limits.Burst == 0 {
		return bad("tenant-burst", "must be at least 1 with a tenant-rate (0 turns the rate limit off: set tenant-rate 0)")
	}
	if c.PluginTime > 0 && c.PluginBurst == 0 {
		return bad("tenant-plugin-burst", "must be more than 0 with a tenant-plugin-time (0 turns the plugin time budget off: set tenant-plugin-time 0)")
	}
	switch {
	case c.origins["compile-worker"] == fromDefault:
		c.CompileWorker = !c.Native || c.PluginCache != ""
	case c.CompileWorker && c.Native && c.PluginCache == "":
		return bad("compile-worker", "needs a compiled cache on disk: --plugin-cache DIR with --native")
	}
	switch {
	case c.origins["feedback"] == fromDefault:
		c.Feedback = c.storeDialect != ""
	case c.Feedback && c.storeDialect == "":
		return bad("feedback", "needs a durable store: --store sqlite:PATH or postgres:URL")
	}
	return nil
}

func (c *serveConfig) readKeys() error {
	b, err := os.ReadFile(c.Keys)
	if err != nil {
		return err
	}
	// Strict: a key twice or in another case ("Keys", "admin_keys" given
	// twice) would let one file grant two different sets of keys.
	if err := abi.DecodeStrict(b, &c.keys); err != nil {
		return fmt.Errorf("%s: %s", c.Keys, strings.TrimPrefix(err.Error(), "abi: strict json: "))
	}
	if len(c.keys.Tenants) == 0 {
		return fmt.Errorf("%s: no tenants", c.Keys)
	}
	seen := map[string]bool{}
	for i, t := range c.keys.Tenants {
		if t.Tenant == "" || t.Agent == "" || len(t.Keys)+len(t.GatewayKeys) == 0 {
			return fmt.Errorf("%s: tenants[%d] needs tenant, agent and keys", c.Keys, i)
		}
		for _, k := range append(slices.Clone(t.Keys), t.GatewayKeys...) {
			if len(k) < 16 || seen[k] {
				return fmt.Errorf("%s: tenants[%d]: a key is shorter than 16 characters or used twice", c.Keys, i)
			}
			seen[k] = true
		}
		for _, cp := range t.Capabilities {
			if !cp.Known() {
				return fmt.Errorf("%s: tenants[%d]: capability %q is unknown (known: %s)", c.Keys, i, cp, capabilityNames())
			}
		}
	}
	for _, k := range c.keys.AdminKeys {
		if len(k) < 16 || seen[k] {
			return fmt.Errorf("%s: admin_keys: a key is shorter than 16 characters or used twice", c.Keys)
		}
		seen[k] = true
	}
	for _, k := range c.keys.MetricsKeys {
		if len(k) < 16 || seen[k] {
			return fmt.Errorf("%s: metrics_keys: a key is shorter than 16 characters or used twice", c.Keys)
		}
		seen[k] = true
	}
	return nil
}

// show renders a value read from a config file for an error message.
func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// quoteAll quotes each name and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// capabilityNames lists the capabilities a keys file may grant.
func capabilityNames() string {
	all := []abi.Capability{abi.CapClock, abi.CapRandom,
		abi.CapStateLedger, abi.CapStateFingerprints, abi.CapStateEvidence, abi.CapStateEntities, abi.CapStateNode,
		abi.CapStateSession, abi.CapStateConversation, abi.CapStateFollowUp, abi.CapStateApproval, abi.CapStateCatalog,
		abi.CapEffectLedger, abi.CapEffectFingerprint, abi.CapEffectEvidence, abi.CapEffectNode, abi.CapEffectOutput, abi.CapEffectState}
	names := make([]string, len(all))
	for i, c := range all {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}
