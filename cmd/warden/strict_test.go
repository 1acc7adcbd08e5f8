package main

import (
	"errors"
	"io"
	"testing"

	"github.com/agentwarden/warden/internal/server"
)

// TestConfigFileStrictKeys: a config file may not give a key twice, two
// keys that differ only in case, or a key in another case than its own
// name, in any of its formats; viper alone would fold them into one value
// silently.
func TestConfigFileStrictKeys(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	p := func(name, body string) string { return f.file(t, name, body) }
	tests := []struct {
		name, path, want string
	}{
		{"yaml: a key twice", p("twice.yaml", "run-timeout: 30s\nlease: 20s\nrun-timeout: 1s\n"), `line 3: key "run-timeout" appears twice`},
		{"yaml: a known key upper-cased", p("upper.yaml", "Run-Timeout: 30s\n"), `key "Run-Timeout" must be spelled "run-timeout"`},
		{"yaml: a key and its case variant", p("both.yaml", "lease: 20s\nLEASE: 1s\n"), `key "LEASE" must be spelled "lease"`},
		{"yaml: a server key twice", p("srv.yaml", "mcp-servers:\n  - name: a\n    url: http://x\n    url: http://y\n"), `line 4: key "url" of mcp-servers[0] appears twice`},
		{"yaml: a server key in another case", p("srvcase.yaml", "mcp-servers:\n  - Name: a\n    url: http://x\n"), `key "Name" of mcp-servers[0] must be spelled "name"`},
		{"yaml: headers that differ only in case", p("hdr.yaml", "mcp-servers:\n  - name: a\n    url: http://x\n    headers: {X-Tenant: a, x-tenant: b}\n"),
			`key "X-Tenant" of mcp-servers[0].headers and "x-tenant" differ only in case`},
		{"json: a key twice", p("twice.json", `{"lease":"20s","lease":"1s"}`), `key "lease" appears twice`},
		{"json: a key in another case", p("case.json", `{"Lease":"20s"}`), `key "Lease" must be spelled "lease"`},
		{"json: a server key twice", p("srv.json", `{"mcp-servers":[{"name":"a","name":"b","url":"http://x"}]}`), `key "name" of mcp-servers[0] appears twice`},
		{"toml: a key twice", p("twice.toml", "lease = \"20s\"\nlease = \"1s\"\n"), `toml: key lease is already defined`},
		{"toml: a key in another case", p("case.toml", "LOG-LEVEL = \"info\"\n"), `key "LOG-LEVEL" must be spelled "log-level"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(f.with("--config", tt.path), envOf(nil), io.Discard)
			want := `--config (WARDEN_CONFIG): ` + tt.path + `: ` + tt.want
			var ce *configError
			if err == nil || err.Error() != want || !errors.As(err, &ce) {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		})
	}
	// The same keys, once each and in their own case, load.
	ok := p("ok.yaml", "run-timeout: 30s\nlease: 20s\nmcp-servers:\n  - name: a\n    url: http://x\n    headers: {X-Tenant: a}\n")
	if _, err := loadServeConfig(f.with("--config", ok), envOf(nil), io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestKeysFileStrict: keys.json is read strictly: a key twice or in
// another case could grant two different sets of keys.
func TestKeysFileStrict(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	const k1, k2 = "acme-key-0123456789", "other-key-0123456789"
	tests := []struct {
		name, body, want string
	}{
		{"admin_keys twice", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"]}],"admin_keys":[],"admin_keys":["` + k2 + `"]}`,
			`duplicate key "admin_keys" in $`},
		{"a tenant's keys twice", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"],"keys":["` + k2 + `"]}]}`,
			`duplicate key "keys" in $.tenants[0]`},
		{"Tenants", `{"Tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"]}]}`,
			`key in the wrong case: "Tenants" in $ must be spelled "tenants"`},
		{"Agent", `{"tenants":[{"tenant":"acme","Agent":"cms","keys":["` + k1 + `"]}]}`,
			`key in the wrong case: "Agent" in $.tenants[0] must be spelled "agent"`},
		{"metrics key too short", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"]}],"metrics_keys":["short"]}`,
			`metrics_keys: a key is shorter than 16 characters or used twice`},
		{"metrics key is a tenant key", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"]}],"metrics_keys":["` + k1 + `"]}`,
			`metrics_keys: a key is shorter than 16 characters or used twice`},
		{"an unknown capability", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"],"capabilities":["clock","network"]}]}`,
			`tenants[0]: capability "network" is unknown (known: clock, random, state.ledger, state.fingerprints, state.evidence, state.entities, state.node, state.session, state.conversation, state.followup, state.approval, state.catalog, effect.ledger, effect.fingerprint, effect.evidence, effect.node, effect.output, effect.state)`},
		{"Capabilities", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["` + k1 + `"],"Capabilities":["clock"]}]}`,
			`key in the wrong case: "Capabilities" in $.tenants[0] must be spelled "capabilities"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := f.file(t, tt.name+".json", tt.body)
			_, err := loadServeConfig(f.with("--keys", path), envOf(nil), io.Discard)
			want := "--keys (WARDEN_KEYS): " + path + ": " + tt.want
			if err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		})
	}
	path := f.file(t, "metrics.json", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+k1+`"]}],"metrics_keys":["`+k2+`"]}`)
	c, err := loadServeConfig(f.with("--keys", path), envOf(nil), io.Discard)
	if err != nil || len(c.keys.MetricsKeys) != 1 || c.keys.MetricsKeys[0] != k2 {
		t.Fatalf("metrics_keys: %v %+v", err, c.keys)
	}
}

// TestConfigLimits: the tenant-* keys and metrics-addr, their defaults,
// their sources and their errors.
func TestConfigLimits(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	c, err := loadServeConfig(f.with(), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != server.DefaultLimits() || c.MetricsAddr != "" {
		t.Fatalf("defaults: %+v %q", c.Limits, c.MetricsAddr)
	}
	file := f.file(t, "limits.yaml", "tenant-rate: 2.5\ntenant-burst: 5\ntenant-max-sessions: 0\nmetrics-addr: 127.0.0.1:9100\n")
	c, err = loadServeConfig(f.with("--config", file, "--tenant-max-runs", "2"), envOf(map[string]string{"WARDEN_TENANT_MAX_TOOL_CALLS": "3"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := server.Limits{Rate: 2.5, Burst: 5, MaxSessions: 0, MaxRuns: 2, MaxToolCalls: 3}
	if c.Limits != want || c.MetricsAddr != "127.0.0.1:9100" {
		t.Fatalf("got %+v %q, want %+v", c.Limits, c.MetricsAddr, want)
	}
	intRate := f.file(t, "intrate.json", `{"tenant-rate": 3}`)
	if c, err = loadServeConfig(f.with("--config", intRate), envOf(nil), io.Discard); err != nil || c.Limits.Rate != 3 {
		t.Fatalf("an integer rate: %v %+v", err, c.Limits)
	}
	wordRate := f.file(t, "wordrate.yaml", "tenant-rate: fast\n")
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"rate not a number", []string{"--tenant-rate", "fast"}, nil, `--tenant-rate (WARDEN_TENANT_RATE): flag --tenant-rate: "fast" is not a number`},
		{"rate not a number in the file", []string{"--config", wordRate}, nil, `--tenant-rate (WARDEN_TENANT_RATE): file ` + wordRate + ` key tenant-rate: "fast" is not a number`},
		{"rate infinite", []string{"--tenant-rate", "+Inf"}, nil, `--tenant-rate (WARDEN_TENANT_RATE): flag --tenant-rate: "+Inf" is not a number`},
		{"rate negative", nil, map[string]string{"WARDEN_TENANT_RATE": "-1"}, `--tenant-rate (WARDEN_TENANT_RATE): must not be negative (0 turns the limit off)`},
		{"burst zero with a rate", []string{"--tenant-burst", "0"}, nil, `--tenant-burst (WARDEN_TENANT_BURST): must be at least 1 with a tenant-rate (0 turns the rate limit off: set tenant-rate 0)`},
		{"sessions negative", []string{"--tenant-max-sessions", "-2"}, nil, `--tenant-max-sessions (WARDEN_TENANT_MAX_SESSIONS): must not be negative (0 turns the limit off)`},
		{"runs not an integer", []string{"--tenant-max-runs", "1.5"}, nil, `--tenant-max-runs (WARDEN_TENANT_MAX_RUNS): flag --tenant-max-runs: "1.5" is not an integer`},
		{"tool calls negative", []string{"--tenant-max-tool-calls", "-1"}, nil, `--tenant-max-tool-calls (WARDEN_TENANT_MAX_TOOL_CALLS): must not be negative (0 turns the limit off)`},
		{"metrics-addr not HOST:PORT", []string{"--metrics-addr", "9100"}, nil, `--metrics-addr (WARDEN_METRICS_ADDR): "9100" is not HOST:PORT`},
		{"metrics-addr is addr", []string{"--addr", "127.0.0.1:8080", "--metrics-addr", "127.0.0.1:8080"}, nil,
			`--metrics-addr (WARDEN_METRICS_ADDR): "127.0.0.1:8080" is --addr too; give the metrics an address of their own`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(f.with(tt.args...), envOf(tt.env), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}
