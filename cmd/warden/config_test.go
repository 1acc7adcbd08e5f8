package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store/sqlstore"
)

// configFixture is serveFixture's store, keys and script with the flags
// that make a valid configuration from them, and a directory for more.
type configFixture struct {
	skills, keys, script, dir string
	base                      []string
}

func newConfigFixture(t *testing.T) configFixture {
	t.Helper()
	skills, keys, script := serveFixture(t)
	return configFixture{skills: skills, keys: keys, script: script, dir: t.TempDir(),
		base: []string{"--skills", skills, "--keys", keys, "--model", "scripted", "--model-script", script,
			"--tools", "mcp-command", "--mcp-command", "mcp-cms"}}
}

// with returns the valid flags followed by extra.
func (f configFixture) with(extra ...string) []string {
	return append(append([]string{}, f.base...), extra...)
}

// file writes body to name in the fixture's directory and returns its path.
func (f configFixture) file(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(f.dir, name)
	writeFile(t, path, body)
	return path
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	badKeys := f.file(t, "bad.json", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["short"]}]}`)
	unknownKeys := f.file(t, "unknown.json", `{"tenant":[]}`)
	notDir := f.file(t, "plain", "")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad addr", f.with("--addr", "nohost"), nil, `--addr (WARDEN_ADDR): "nohost" is not HOST:PORT`},
		{"bad addr from env", f.base, map[string]string{"WARDEN_ADDR": "x"}, `--addr (WARDEN_ADDR): "x" is not HOST:PORT`},
		{"flag wins over env", f.with("--addr", "127.0.0.1:0", "--model", "gpt"), map[string]string{"WARDEN_ADDR": "x"}, `--model (WARDEN_MODEL): "gpt" is not scripted or openai`},
		{"no skills", []string{"--keys", f.keys}, nil, "--skills (WARDEN_SKILLS): required"},
		{"skills not a dir", f.with("--skills", f.keys), nil, `--skills (WARDEN_SKILLS): "` + f.keys + `" is not a directory`},
		{"no keys", []string{"--skills", f.skills}, nil, "--keys (WARDEN_KEYS): required"},
		{"short key", f.with("--keys", badKeys), nil, "--keys (WARDEN_KEYS): " + badKeys + ": tenants[0]: a key is shorter than 16 characters or used twice"},
		{"unknown key field", f.with("--keys", unknownKeys), nil, "--keys (WARDEN_KEYS): " + unknownKeys + `: unknown key "tenant" in $`},
		{"no model", []string{"--skills", f.skills, "--keys", f.keys}, nil, "--model (WARDEN_MODEL): required: scripted or openai"},
		{"scripted without script", []string{"--skills", f.skills, "--keys", f.keys, "--model", "scripted"}, nil, "--model-script (WARDEN_MODEL_SCRIPT): required with --model scripted"},
		{"openai without base url", f.with("--model", "openai"), nil, "--base-url (WARDEN_BASE_URL): required with --model openai"},
		{"openai without model name", f.with("--model", "openai", "--base-url", "http://x"), nil, "--model-name (WARDEN_MODEL_NAME): required with --model openai"},
		{"openai empty key env", f.with("--model", "openai", "--base-url", "http://x", "--model-name", "m", "--api-key-env", "NO_SUCH_VAR_XYZ"), nil, "--api-key-env (WARDEN_API_KEY_ENV): NO_SUCH_VAR_XYZ is empty"},
		{"bad tools", f.with("--tools", "grpc"), nil, `--tools (WARDEN_TOOLS): "grpc" is not mcp-command, mcp-url or mcp-servers`},
		{"mcp url not http", f.with("--tools", "mcp-url", "--mcp-url", "ftp://x"), nil, `--mcp-url (WARDEN_MCP_URL): "ftp://x" is not an http(s) URL`},
		{"zero grace", f.with("--shutdown-grace", "0s"), nil, "--shutdown-grace (WARDEN_SHUTDOWN_GRACE): must be positive"},
		{"negative run timeout", f.with("--run-timeout=-1s"), nil, "--run-timeout (WARDEN_RUN_TIMEOUT): must be positive"},
		{"plugins missing", f.with("--plugins", filepath.Join(f.dir, "nope")), nil, `--plugins (WARDEN_PLUGINS): "` + filepath.Join(f.dir, "nope") + `" is not a directory`},
		{"plugins not a dir", f.base, map[string]string{"WARDEN_PLUGINS": notDir}, `--plugins (WARDEN_PLUGINS): "` + notDir + `" is not a directory`},
		{"negative watch interval", f.with("--watch-interval=-1s"), nil, "--watch-interval (WARDEN_WATCH_INTERVAL): must not be negative"},
		{"watch without plugins", f.with("--watch-interval", "5s"), nil, "--watch-interval (WARDEN_WATCH_INTERVAL): needs --plugins"},
		{"native with plugins", f.with("--native", "--plugins", f.dir), nil, "--native (WARDEN_NATIVE): runs the first-party plugins in-process; --plugins runs them as wasm: drop one"},
		{"native not a bool", f.base, map[string]string{"WARDEN_NATIVE": "yes"}, `--native (WARDEN_NATIVE): env WARDEN_NATIVE: "yes" is not a bool`},
		{"instance with a space", f.with("--instance", "web 1"), nil, `--instance (WARDEN_INSTANCE): "web 1" does not match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`},
		{"instance starting with a dash", f.with("--instance=-a"), nil, `--instance (WARDEN_INSTANCE): "-a" does not match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`},
		{"instance too long", f.with("--instance", strings.Repeat("a", 65)), nil, `--instance (WARDEN_INSTANCE): "` + strings.Repeat("a", 65) + `" does not match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`},
		{"short lease", f.base, map[string]string{"WARDEN_LEASE": "500ms"}, "--lease (WARDEN_LEASE): 500ms is shorter than 1s"},
		{"zero lease", f.with("--lease", "0s"), nil, "--lease (WARDEN_LEASE): 0s is shorter than 1s"},
		{"short prepare deadline", f.with("--prepare-deadline", "500ms"), nil, "--prepare-deadline (WARDEN_PREPARE_DEADLINE): 500ms is shorter than 1s"},
		{"prepare deadline not a duration", f.base, map[string]string{"WARDEN_PREPARE_DEADLINE": "soon"},
			"--prepare-deadline (WARDEN_PREPARE_DEADLINE): env WARDEN_PREPARE_DEADLINE: \"soon\" is not a duration"},
		{"short idle timeout", f.with("--idle-timeout", "30s"), nil, "--idle-timeout (WARDEN_IDLE_TIMEOUT): 30s is shorter than 1m"},
		{"idle timeout not a duration", f.base, map[string]string{"WARDEN_IDLE_TIMEOUT": "soon"}, "--idle-timeout (WARDEN_IDLE_TIMEOUT): env WARDEN_IDLE_TIMEOUT: \"soon\" is not a duration"},
		{"bad log level", f.with("--log-level", "verbose"), nil, `--log-level (WARDEN_LOG_LEVEL): "verbose" is not debug, info, warn or error`},
		{"log level is case-sensitive", f.with("--log-level", "INFO"), nil, `--log-level (WARDEN_LOG_LEVEL): "INFO" is not debug, info, warn or error`},
		{"bad trace", f.with("--trace", "jaeger:x"), nil, `--trace (WARDEN_TRACE): "jaeger:x" is not none, stdout:FILE or otlp:URL`},
		{"otlp without a URL", f.with("--trace", "otlp:collector:4318"), nil, `--trace (WARDEN_TRACE): "otlp:collector:4318" has no http(s) URL after otlp:`},
		{"trace without file", f.with("--trace", "stdout:"), nil, `--trace (WARDEN_TRACE): "stdout:" has no FILE after stdout:`},
		{"feedback with memory", f.with("--feedback"), nil, "--feedback (WARDEN_FEEDBACK): needs a durable store: --store sqlite:PATH or postgres:URL"},
		{"feedback with memory from env", f.base, map[string]string{"WARDEN_FEEDBACK": "true"}, "--feedback (WARDEN_FEEDBACK): needs a durable store: --store sqlite:PATH or postgres:URL"},
		{"unexpected argument", f.with("extra"), nil, `unexpected argument "extra"`},
		{"unknown flag", f.with("--run-timout", "1s"), nil, "unknown flag: --run-timout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(tt.args, envOf(tt.env), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	if _, err := loadServeConfig(f.base, envOf(nil), io.Discard); err != nil {
		t.Fatalf("valid config: %v", err)
	}
}

func TestConfigStore(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	tests := []struct {
		name, store, env, want string
	}{
		{"bad scheme", "mysql:x", "", `--store (WARDEN_STORE): "mysql:x" is not memory, sqlite:PATH or postgres:URL`},
		{"bare path", "/tmp/w.db", "", `--store (WARDEN_STORE): "/tmp/w.db" is not memory, sqlite:PATH or postgres:URL`},
		{"sqlite without path", "sqlite:", "", `--store (WARDEN_STORE): "sqlite:" has no PATH after sqlite:`},
		{"postgres without url", "", "postgres:", `--store (WARDEN_STORE): "postgres:" has no URL after postgres:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := f.base
			if tt.store != "" {
				args = f.with("--store", tt.store)
			}
			_, err := loadServeConfig(args, envOf(map[string]string{"WARDEN_STORE": tt.env}), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	// Feedback follows the store unless a source sets it.
	valid := []struct {
		store    string
		dialect  sqlstore.Dialect
		dsn      string
		feedback bool
	}{
		{"", "", "", false},
		{"memory", "", "", false},
		{"sqlite:/x/w.db", sqlstore.SQLite, "/x/w.db", true},
		{"postgres:postgres://u@127.0.0.1/w", sqlstore.Postgres, "postgres://u@127.0.0.1/w", true},
	}
	for _, tt := range valid {
		// PostgreSQL's instances forward to each other, with a secret.
		c, err := loadServeConfig(f.with("--store", tt.store), envOf(map[string]string{"WARDEN_FORWARD_SECRET": strings.Repeat("s", 32)}), io.Discard)
		if err != nil || c.storeDialect != tt.dialect || c.storeDSN != tt.dsn || c.Feedback != tt.feedback {
			t.Errorf("--store %q: %v, dialect %q, dsn %q, feedback %t", tt.store, err, c.storeDialect, c.storeDSN, c.Feedback)
		}
	}
	c, err := loadServeConfig(f.with("--store", "sqlite:/x/w.db", "--feedback=false"), envOf(nil), io.Discard)
	if err != nil || c.Feedback {
		t.Errorf("--feedback=false with sqlite: %v, feedback %t", err, c.Feedback)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	c, err := loadServeConfig(f.base, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = "warden"
	}
	got := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%t", c.Addr, c.Store, c.RunTimeout, c.Grace, c.Plugins,
		c.WatchInterval, c.Instance, c.Lease, c.PrepareDeadline, c.LogLevel, c.Trace, c.Feedback)
	want := fmt.Sprintf("127.0.0.1:8080|memory|5m0s|10s||0s|%s-%d|15s|2m0s|info|none|false", host, os.Getpid())
	if got != want {
		t.Fatalf("defaults\ngot  %s\nwant %s", got, want)
	}
}

// fullConfig is one file per format setting every key but the paths, which
// the test adds as flags.
var fullConfig = map[string]string{
	"warden.yaml": `# every key but the paths
addr: 127.0.0.1:9090
model: scripted
tools: mcp-url
mcp-url: http://127.0.0.1:8081/mcp
mcp-command: ""
store: sqlite:/var/lib/warden.db
run-timeout: 30s
shutdown-grace: 3s
watch-interval: 0s
instance: web-1
lease: 20s
log-level: debug
trace: stdout:/tmp/spans.jsonl
feedback: false
`,
	"warden.yml": `addr: 127.0.0.1:9090
model: scripted
tools: mcp-url
mcp-url: http://127.0.0.1:8081/mcp
store: sqlite:/var/lib/warden.db
run-timeout: 30s
shutdown-grace: 3s
instance: web-1
lease: 20s
log-level: debug
trace: stdout:/tmp/spans.jsonl
feedback: false
`,
	"warden.json": `{
  "addr": "127.0.0.1:9090", "model": "scripted", "tools": "mcp-url", "mcp-url": "http://127.0.0.1:8081/mcp",
  "store": "sqlite:/var/lib/warden.db", "run-timeout": "30s", "shutdown-grace": "3s", "instance": "web-1",
  "lease": "20s", "log-level": "debug", "trace": "stdout:/tmp/spans.jsonl", "feedback": false
}`,
	"warden.toml": `addr = "127.0.0.1:9090"
model = "scripted"
tools = "mcp-url"
mcp-url = "http://127.0.0.1:8081/mcp"
store = "sqlite:/var/lib/warden.db"
run-timeout = "30s"
shutdown-grace = "3s"
instance = "web-1"
lease = "20s"
log-level = "debug"
trace = "stdout:/tmp/spans.jsonl"
feedback = false
`,
}

func TestConfigFile(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	const want = "127.0.0.1:9090|scripted|mcp-url|http://127.0.0.1:8081/mcp|sqlite:/var/lib/warden.db|30s|3s|web-1|20s|debug|stdout:/tmp/spans.jsonl|false"
	for name, body := range fullConfig {
		path := f.file(t, name, body)
		for _, how := range []string{"flag", "env"} {
			t.Run(name+" by "+how, func(t *testing.T) {
				t.Parallel()
				args := []string{"--skills", f.skills, "--keys", f.keys, "--model-script", f.script}
				env := map[string]string{}
				if how == "flag" {
					args = append(args, "--config", path)
				} else {
					env["WARDEN_CONFIG"] = path
				}
				c, err := loadServeConfig(args, envOf(env), io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%t", c.Addr, c.Model, c.Tools, c.MCPURL, c.Store,
					c.RunTimeout, c.Grace, c.Instance, c.Lease, c.LogLevel, c.Trace, c.Feedback)
				if got != want {
					t.Fatalf("got  %s\nwant %s", got, want)
				}
			})
		}
	}
}

// TestConfigPrecedence sets one key in up to three sources: a flag wins
// over WARDEN_*, which wins over the file, which wins over the default;
// an empty value counts as unset.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	yaml := f.file(t, "p.yaml", "run-timeout: 1m\nlog-level: warn\n")
	empty := f.file(t, "empty.yaml", "run-timeout: \"\"\nlog-level:\n")
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     time.Duration
		wantFrom origin
	}{
		{"default", nil, nil, 5 * time.Minute, fromDefault},
		{"file", []string{"--config", yaml}, nil, time.Minute, fromFile},
		{"env over file", []string{"--config", yaml}, map[string]string{"WARDEN_RUN_TIMEOUT": "2m"}, 2 * time.Minute, fromEnv},
		{"flag over env and file", []string{"--config", yaml, "--run-timeout", "3m"}, map[string]string{"WARDEN_RUN_TIMEOUT": "2m"}, 3 * time.Minute, fromFlag},
		{"flag over file", []string{"--config", yaml, "--run-timeout", "3m"}, nil, 3 * time.Minute, fromFlag},
		{"empty env is unset", []string{"--config", yaml}, map[string]string{"WARDEN_RUN_TIMEOUT": ""}, time.Minute, fromFile},
		{"empty flag is unset", []string{"--config", yaml, "--run-timeout", ""}, map[string]string{"WARDEN_RUN_TIMEOUT": "2m"}, 2 * time.Minute, fromEnv},
		{"empty file value is unset", []string{"--config", empty}, nil, 5 * time.Minute, fromDefault},
		{"flag --config over WARDEN_CONFIG", []string{"--config", yaml}, map[string]string{"WARDEN_CONFIG": empty}, time.Minute, fromFile},
		{"WARDEN_CONFIG", nil, map[string]string{"WARDEN_CONFIG": yaml}, time.Minute, fromFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadServeConfig(f.with(tt.args...), envOf(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.RunTimeout != tt.want || c.origins["run-timeout"] != tt.wantFrom {
				t.Fatalf("run-timeout %s from %d, want %s from %d", c.RunTimeout, c.origins["run-timeout"], tt.want, tt.wantFrom)
			}
		})
	}
}

// TestConfigFileErrors: every bad file, key or value gives one exact
// message naming the key and, for a value, where it came from.
func TestConfigFileErrors(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	p := func(name, body string) string { return f.file(t, name, body) }
	typo := p("typo.yaml", "run-timout: 30s\n")
	typos := p("typos.json", `{"run-timout": "30s", "lease": "20s", "modle": "openai"}`)
	nested := p("nested.toml", "[model]\nname = \"x\"\n")
	nullTypo := p("null.yaml", "stroe:\n")
	selfRef := p("self.yaml", "config: other.yaml\n")
	badYAML := p("bad.yaml", "addr: [\n")
	badJSON := p("bad.json", `{"addr": }`)
	durNumber := p("dur.yaml", "run-timeout: 30\n")
	durWord := p("durword.toml", "lease = \"soon\"\n")
	boolString := p("bool.yaml", "feedback: \"yes\"\n")
	boolQuoted := p("boolq.json", `{"feedback": "true"}`)
	strNumber := p("str.json", `{"instance": 7}`)
	strMap := p("map.yaml", "skills: {a: 1}\n")
	strList := p("list.yaml", "addr: [a, b]\n")
	level := p("level.yaml", "log-level: verbose\n")
	feedback := p("feedback.toml", "feedback = true\n")
	watch := p("watch.yaml", "watch-interval: 5s\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown key", []string{"--config", typo}, nil, `--config (WARDEN_CONFIG): ` + typo + `: unknown key "run-timout"`},
		{"unknown keys", nil, map[string]string{"WARDEN_CONFIG": typos}, `--config (WARDEN_CONFIG): ` + typos + `: unknown keys "modle", "run-timout"`},
		{"table for a string", []string{"--config", nested}, nil, `--model (WARDEN_MODEL): file ` + nested + ` key model: {"name":"x"} is not a string`},
		{"unknown key without a value", []string{"--config", nullTypo}, nil, `--config (WARDEN_CONFIG): ` + nullTypo + `: unknown key "stroe"`},
		{"config in the file", []string{"--config", selfRef}, nil, `--config (WARDEN_CONFIG): ` + selfRef + `: key "config" cannot be set in a config file`},
		{"missing file", []string{"--config", filepath.Join(f.dir, "none.yaml")}, nil, `--config (WARDEN_CONFIG): open ` + filepath.Join(f.dir, "none.yaml") + `: no such file or directory`},
		{"unsupported extension", []string{"--config", "warden.ini"}, nil, `--config (WARDEN_CONFIG): "warden.ini" is not a .yaml, .yml, .json or .toml file`},
		{"no extension", nil, map[string]string{"WARDEN_CONFIG": "warden"}, `--config (WARDEN_CONFIG): "warden" is not a .yaml, .yml, .json or .toml file`},
		{"bad yaml", []string{"--config", badYAML}, nil, `--config (WARDEN_CONFIG): ` + badYAML + `: yaml: line 1: did not find expected node content`},
		{"bad json", []string{"--config", badJSON}, nil, `--config (WARDEN_CONFIG): ` + badJSON + `: invalid character '}' looking for beginning of value`},

		{"duration as a number in the file", []string{"--config", durNumber}, nil, `--run-timeout (WARDEN_RUN_TIMEOUT): file ` + durNumber + ` key run-timeout: 30 is not a duration`},
		{"duration as a word in the file", []string{"--config", durWord}, nil, `--lease (WARDEN_LEASE): file ` + durWord + ` key lease: "soon" is not a duration`},
		{"duration from env", nil, map[string]string{"WARDEN_RUN_TIMEOUT": "soon"}, `--run-timeout (WARDEN_RUN_TIMEOUT): env WARDEN_RUN_TIMEOUT: "soon" is not a duration`},
		{"duration from flag", []string{"--shutdown-grace", "10"}, nil, `--shutdown-grace (WARDEN_SHUTDOWN_GRACE): flag --shutdown-grace: "10" is not a duration`},
		{"bool as a string in the file", []string{"--config", boolString}, nil, `--feedback (WARDEN_FEEDBACK): file ` + boolString + ` key feedback: "yes" is not a bool`},
		{"bool quoted in the file", []string{"--config", boolQuoted}, nil, `--feedback (WARDEN_FEEDBACK): file ` + boolQuoted + ` key feedback: "true" is not a bool`},
		{"bool from env", nil, map[string]string{"WARDEN_FEEDBACK": "yes"}, `--feedback (WARDEN_FEEDBACK): env WARDEN_FEEDBACK: "yes" is not a bool`},
		{"bool from flag", []string{"--feedback=on"}, nil, `--feedback (WARDEN_FEEDBACK): flag --feedback: "on" is not a bool`},
		{"string as a number in the file", []string{"--config", strNumber}, nil, `--instance (WARDEN_INSTANCE): file ` + strNumber + ` key instance: 7 is not a string`},
		{"string as a map in the file", []string{"--config", strMap}, nil, `--skills (WARDEN_SKILLS): file ` + strMap + ` key skills: {"a":1} is not a string`},
		{"string as a list in the file", []string{"--config", strList}, nil, `--addr (WARDEN_ADDR): file ` + strList + ` key addr: ["a","b"] is not a string`},

		{"unknown table", []string{"--config", p("table.toml", "[limits]\nrounds = 3\n")}, nil, `--config (WARDEN_CONFIG): ` + filepath.Join(f.dir, "table.toml") + `: unknown key "limits"`},
		{"a flag does not hide a wrong type in the file", []string{"--config", durWord, "--lease", "20s"}, nil, `--lease (WARDEN_LEASE): file ` + durWord + ` key lease: "soon" is not a duration`},
		{"a flag does not hide a wrong type in env", []string{"--lease", "20s"}, map[string]string{"WARDEN_LEASE": "soon"}, `--lease (WARDEN_LEASE): env WARDEN_LEASE: "soon" is not a duration`},

		{"bad value in the file", []string{"--config", level}, nil, `--log-level (WARDEN_LOG_LEVEL): file ` + level + ` key log-level: "verbose" is not debug, info, warn or error`},
		{"feedback with memory in the file", []string{"--config", feedback}, nil, `--feedback (WARDEN_FEEDBACK): file ` + feedback + ` key feedback: needs a durable store: --store sqlite:PATH or postgres:URL`},
		{"watch without plugins in the file", []string{"--config", watch}, nil, `--watch-interval (WARDEN_WATCH_INTERVAL): file ` + watch + ` key watch-interval: needs --plugins`},
		{"a flag over a bad file value", []string{"--config", level, "--log-level", "loud"}, nil, `--log-level (WARDEN_LOG_LEVEL): "loud" is not debug, info, warn or error`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(f.with(tt.args...), envOf(tt.env), io.Discard)
			var ce *configError
			if err == nil || err.Error() != tt.want || !errors.As(err, &ce) {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestConfigUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--skills", "x", "--help"}} {
		var stderr bytes.Buffer
		_, err := loadServeConfig(args, envOf(nil), &stderr)
		if !errors.Is(err, flag.ErrHelp) || stderr.String() != serveUsage {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := cmdServe(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 || stderr.String() != serveUsage {
		t.Fatalf("warden serve --help: exit %d\n%s", code, stderr.String())
	}
	for _, s := range append((&serveConfig{}).settings(), setting{name: configKey}) {
		if !strings.Contains(serveUsage, "\n  --"+s.name+" ") && !strings.Contains(serveUsage, "\n  --"+s.name+"[") {
			t.Errorf("usage does not list --%s", s.name)
		}
	}
	for _, says := range []string{"config file", "WARDEN_* variable", "the flag"} {
		if !strings.Contains(serveUsage, says) {
			t.Errorf("usage does not mention %q", says)
		}
	}
}

// TestConfigExample loads examples/serve/warden.yaml as a deployment would,
// with the paths it cannot know (the keys file, and the skill store, which
// it names from the repository root) given as flags.
func TestConfigExample(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	example := filepath.Join("..", "..", "examples", "serve", "warden.yaml")
	args := []string{"--config", example, "--skills", filepath.Join("..", "..", "contract", "testdata", "store"), "--keys", f.keys}
	c, err := loadServeConfig(args, envOf(map[string]string{"OPENAI_API_KEY": "sk-test"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%t", c.Model, c.BaseURL, c.apiKey, c.Tools, c.MCPCommand, c.storeDialect,
		c.RunTimeout, c.Lease, c.LogLevel, c.Trace, c.Feedback)
	const want = "openai|http://127.0.0.1:11434/v1|sk-test|mcp-command|go run ./examples/mcp-cms|sqlite|5m0s|15s|info|none|true"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Without the key the file names, it fails on that key.
	_, err = loadServeConfig(args, envOf(nil), io.Discard)
	if want := "--api-key-env (WARDEN_API_KEY_ENV): file " + example + " key api-key-env: OPENAI_API_KEY is empty"; err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
