package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

const validGuard = `{
  "name": "arg-policy",
  "version": "1.2.3",
  "abi": 1,
  "role": "guard",
  "description": "checks arguments against the tool schema",
  "phases": ["before", "after"],
  "capabilities": ["clock", "state.ledger", "effect.ledger"],
  "configSchema": {"type": "object"},
  "limits": {"timeoutMs": 50, "memoryPages": 16, "maxInputBytes": 1024, "maxOutputBytes": 2048}
}`

const validBuiltin = `{
  "name": "builtin.output_set",
  "version": "0.1.0-rc.1",
  "abi": 1,
  "role": "builtin",
  "tools": [
    {"name": "builtin_output_set", "description": "write a node output", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}},
    {"name": "builtin-output-get", "description": "", "inputSchema": {"type": "object"}}
  ],
  "capabilities": ["effect.output", "state.node"]
}`

func TestParseManifestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want abi.Manifest
	}{
		{"guard", validGuard, abi.Manifest{
			Name: "arg-policy", Version: "1.2.3", ABI: 1, Role: abi.RoleGuard,
			Description:  "checks arguments against the tool schema",
			Phases:       []abi.Phase{abi.PhaseBefore, abi.PhaseAfter},
			Capabilities: []abi.Capability{abi.CapClock, abi.CapStateLedger, abi.CapEffectLedger},
			ConfigSchema: json.RawMessage(`{"type": "object"}`),
			Limits:       abi.Limits{TimeoutMs: 50, MemoryPages: 16, MaxInputBytes: 1024, MaxOutputBytes: 2048},
		}},
		{"builtin", validBuiltin, abi.Manifest{
			Name: "builtin.output_set", Version: "0.1.0-rc.1", ABI: 1, Role: abi.RoleBuiltin,
			Tools: []abi.ToolSpec{
				{Name: "builtin_output_set", Description: "write a node output", InputSchema: json.RawMessage(`{"type": "object", "properties": {"key": {"type": "string"}}}`)},
				{Name: "builtin-output-get", InputSchema: json.RawMessage(`{"type": "object"}`)},
			},
			Capabilities: []abi.Capability{abi.CapEffectOutput, abi.CapStateNode},
		}},
		{"minimal guard with trailing whitespace",
			"{\"name\":\"g\",\"version\":\"0.0.0\",\"abi\":1,\"role\":\"guard\",\"phases\":[\"after\"]}\n\t ",
			abi.Manifest{Name: "g", Version: "0.0.0", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}}},
		{"limits at the maximum", `{"name":"g","version":"10.20.30","abi":1,"role":"guard","phases":["before"],"limits":{"memoryPages":65536}}`,
			abi.Manifest{Name: "g", Version: "10.20.30", ABI: 1, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}, Limits: abi.Limits{MemoryPages: 65536}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := abi.ParseManifest([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseManifest =\n%+v\nwant\n%+v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

// edit returns validGuard (or validBuiltin) with the top-level keys changed;
// a nil value deletes the key.
func edit(t testing.TB, base string, kv ...any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(m, k)
		} else {
			m[k] = kv[i+1]
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseManifestInvalid(t *testing.T) {
	t.Parallel()
	const g = "abi: manifest arg-policy: invalid manifest: "
	const b = "abi: manifest builtin.output_set: invalid manifest: "
	tool := func(name string, schema any) map[string]any {
		return map[string]any{"name": name, "description": "d", "inputSchema": schema}
	}
	obj := map[string]any{"type": "object"}
	tests := []struct {
		name string
		in   []byte
		msg  string
	}{
		{"unknown top-level key", edit(t, validGuard, "network", true), `abi: manifest: invalid manifest: unknown key "network" in $`},
		{"unknown limits key", edit(t, validGuard, "limits", map[string]any{"cpu": 1}), `abi: manifest: invalid manifest: unknown key "cpu" in $.limits`},
		{"unknown tool key", edit(t, validBuiltin, "tools", []any{map[string]any{"name": "t", "description": "", "inputSchema": obj, "outputSchema": obj}}),
			`abi: manifest: invalid manifest: unknown key "outputSchema" in $.tools[0]`},
		{"wrong type", edit(t, validGuard, "abi", "1"), "abi: manifest: invalid manifest: json: cannot unmarshal string into Go struct field Manifest.abi of type int"},
		{"not an object", []byte(`[]`), "abi: manifest: invalid manifest: json: cannot unmarshal array into Go value of type abi.Manifest"},
		{"empty input", nil, "abi: manifest: invalid manifest: unexpected EOF"},
		{"truncated", []byte(`{"name":"g"`), "abi: manifest: invalid manifest: unexpected EOF"},
		{"trailing word", append([]byte(validGuard), " x"...), "abi: manifest: invalid manifest: trailing data"},
		{"trailing object", append([]byte(validGuard), "{}"...), "abi: manifest: invalid manifest: trailing data"},
		{"trailing brace", append([]byte(validGuard), "}"...), "abi: manifest: invalid manifest: trailing data"},
		{"trailing bracket", append([]byte(validGuard), " ]"...), "abi: manifest: invalid manifest: trailing data"},
		{"second manifest", []byte(validGuard + validGuard), "abi: manifest: invalid manifest: trailing data"},

		// Strict keys: one manifest must not read two ways.
		{"capabilities twice", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"capabilities":[],"capabilities":["clock"]}`),
			`abi: manifest: invalid manifest: duplicate key "capabilities" in $`},
		{"capabilities then Capabilities", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"capabilities":[],"Capabilities":["effect.ledger"]}`),
			`abi: manifest: invalid manifest: key in the wrong case: "Capabilities" in $ must be spelled "capabilities"`},
		{"Capabilities alone", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"Capabilities":["clock"]}`),
			`abi: manifest: invalid manifest: key in the wrong case: "Capabilities" in $ must be spelled "capabilities"`},
		{"escaped duplicate", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"capabilities":[],"\u0063apabilities":["clock"]}`),
			`abi: manifest: invalid manifest: duplicate key "capabilities" in $`},
		{"long s folds to s", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"capabilitieſ":["clock"]}`),
			`abi: manifest: invalid manifest: key in the wrong case: "capabilitieſ" in $ must be spelled "capabilities"`},
		{"limits key case", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"limits":{"TimeoutMS":5}}`),
			`abi: manifest: invalid manifest: key in the wrong case: "TimeoutMS" in $.limits must be spelled "timeoutMs"`},
		{"tool key twice", []byte(`{"name":"b","version":"1.0.0","abi":1,"role":"builtin","tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"name":"u"}]}`),
			`abi: manifest: invalid manifest: duplicate key "name" in $.tools[0]`},
		{"schema key twice", []byte(`{"name":"b","version":"1.0.0","abi":1,"role":"builtin","tools":[{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}}]}`),
			`abi: manifest: invalid manifest: duplicate key "type" in $.tools[0].inputSchema.properties.a`},
		{"configSchema key twice", []byte(`{"name":"g","version":"1.0.0","abi":1,"role":"guard","phases":["before"],"configSchema":{"type":"object","type":"string"}}`),
			`abi: manifest: invalid manifest: duplicate key "type" in $.configSchema`},

		{"upper-case name", edit(t, validGuard, "name", "ArgPolicy"),
			`abi: manifest ArgPolicy: invalid manifest: name "ArgPolicy" must be 1-64 of [a-z0-9_.-], starting with a letter`},
		{"name starts with a digit", edit(t, validGuard, "name", "1policy"),
			`abi: manifest 1policy: invalid manifest: name "1policy" must be 1-64 of [a-z0-9_.-], starting with a letter`},
		{"name with a space", edit(t, validGuard, "name", "arg policy"),
			`abi: manifest arg policy: invalid manifest: name "arg policy" must be 1-64 of [a-z0-9_.-], starting with a letter`},
		{"name too long", edit(t, validGuard, "name", "a"+strings.Repeat("b", 64)),
			`abi: manifest a` + strings.Repeat("b", 64) + `: invalid manifest: name "a` + strings.Repeat("b", 64) + `" must be 1-64 of [a-z0-9_.-], starting with a letter`},
		{"empty name", edit(t, validGuard, "name", nil),
			`abi: manifest : invalid manifest: name "" must be 1-64 of [a-z0-9_.-], starting with a letter`},

		{"semver two parts", edit(t, validGuard, "version", "1.2"), g + `version "1.2" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver trailing dot", edit(t, validGuard, "version", "1.2.3."), g + `version "1.2.3." is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver leading zero", edit(t, validGuard, "version", "01.2.3"), g + `version "01.2.3" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver v prefix", edit(t, validGuard, "version", "v1.2.3"), g + `version "v1.2.3" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver four parts", edit(t, validGuard, "version", "1.2.3.4"), g + `version "1.2.3.4" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver empty part", edit(t, validGuard, "version", "1..3"), g + `version "1..3" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver empty pre-release", edit(t, validGuard, "version", "1.2.3-"), g + `version "1.2.3-" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver empty", edit(t, validGuard, "version", ""), g + `version "" is not semantic (MAJOR.MINOR.PATCH)`},
		{"semver letters", edit(t, validGuard, "version", "1.x.3"), g + `version "1.x.3" is not semantic (MAJOR.MINOR.PATCH)`},

		{"abi 2", edit(t, validGuard, "abi", 2), g + "abi 2 is not supported (host speaks 1)"},
		{"abi missing", edit(t, validGuard, "abi", nil), g + "abi 0 is not supported (host speaks 1)"},
		{"bad role", edit(t, validGuard, "role", "filter"), g + `role "filter" must be "guard" or "builtin"`},

		{"guard without phases", edit(t, validGuard, "phases", nil), g + "a guard must name its phases"},
		{"guard with empty phases", edit(t, validGuard, "phases", []string{}), g + "a guard must name its phases"},
		{"guard with tools", edit(t, validGuard, "tools", []any{tool("t", obj)}), g + "a guard provides no tools"},
		{"builtin without tools", edit(t, validBuiltin, "tools", nil), b + "a builtin must provide at least one tool"},
		{"builtin with phases", edit(t, validBuiltin, "phases", []string{"before"}), b + "a builtin has no phases"},
		{"bad phase", edit(t, validGuard, "phases", []string{"before", "during"}), g + `phase "during" must be "before" or "after"`},
		{"phase case", edit(t, validGuard, "phases", []string{"BEFORE"}), g + `phase "BEFORE" must be "before" or "after"`},
		{"duplicate phase", edit(t, validGuard, "phases", []string{"after", "after"}), g + `phase "after" listed twice`},

		{"bad tool name", edit(t, validBuiltin, "tools", []any{tool("bad name", obj)}), b + `tools[0].name "bad name" must be 1-64 of [A-Za-z0-9_-]`},
		{"empty tool name", edit(t, validBuiltin, "tools", []any{tool("a", obj), tool("", obj)}), b + `tools[1].name "" must be 1-64 of [A-Za-z0-9_-]`},
		{"duplicate tool", edit(t, validBuiltin, "tools", []any{tool("t", obj), tool("t", obj)}), b + `tool "t" listed twice`},
		{"inputSchema string type", edit(t, validBuiltin, "tools", []any{tool("t", map[string]any{"type": "string"})}),
			b + `tools[0].inputSchema must be a JSON Schema object with "type": "object"`},
		{"inputSchema without type", edit(t, validBuiltin, "tools", []any{tool("a", obj), tool("t", map[string]any{"properties": map[string]any{}})}),
			b + `tools[1].inputSchema must be a JSON Schema object with "type": "object"`},
		{"inputSchema array", edit(t, validBuiltin, "tools", []any{tool("t", []any{})}),
			b + `tools[0].inputSchema must be a JSON Schema object with "type": "object"`},
		{"inputSchema missing", edit(t, validBuiltin, "tools", []any{map[string]any{"name": "t", "description": "d"}}),
			b + `tools[0].inputSchema must be a JSON Schema object with "type": "object"`},
		{"inputSchema type list", edit(t, validBuiltin, "tools", []any{tool("t", map[string]any{"type": []string{"object"}})}),
			b + `tools[0].inputSchema must be a JSON Schema object with "type": "object"`},

		{"unknown capability", edit(t, validGuard, "capabilities", []string{"clock", "network"}), g + `capability "network" is unknown`},
		{"duplicate capability", edit(t, validGuard, "capabilities", []string{"clock", "random", "clock"}), g + `capability "clock" listed twice`},
		{"configSchema array", edit(t, validGuard, "configSchema", []any{}), g + "configSchema must be a JSON object"},
		{"configSchema string", edit(t, validGuard, "configSchema", "object"), g + "configSchema must be a JSON object"},
		{"configSchema null", []byte(strings.Replace(validGuard, `{"type": "object"}`, `null`, 1)), g + "configSchema must be a JSON object"},

		{"negative timeout", edit(t, validGuard, "limits", map[string]any{"timeoutMs": -1}), g + "limits must not be negative"},
		{"negative memory", edit(t, validGuard, "limits", map[string]any{"memoryPages": -1}), g + "limits must not be negative"},
		{"negative input", edit(t, validGuard, "limits", map[string]any{"maxInputBytes": -5}), g + "limits must not be negative"},
		{"negative output", edit(t, validGuard, "limits", map[string]any{"maxOutputBytes": -5}), g + "limits must not be negative"},
		{"too much memory", edit(t, validGuard, "limits", map[string]any{"memoryPages": 65537}), g + "limits.memoryPages 65537 exceeds the 4 GiB address space"},

		{"every problem is reported", []byte(`{"name":"X","version":"1","abi":3,"role":"guard","capabilities":["x","x"]}`), strings.Join([]string{
			`abi: manifest X: invalid manifest: name "X" must be 1-64 of [a-z0-9_.-], starting with a letter`,
			`abi: manifest X: invalid manifest: version "1" is not semantic (MAJOR.MINOR.PATCH)`,
			`abi: manifest X: invalid manifest: abi 3 is not supported (host speaks 1)`,
			`abi: manifest X: invalid manifest: a guard must name its phases`,
			`abi: manifest X: invalid manifest: capability "x" is unknown`,
			`abi: manifest X: invalid manifest: capability "x" is unknown`,
			`abi: manifest X: invalid manifest: capability "x" listed twice`,
		}, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := abi.ParseManifest(tt.in)
			if !errors.Is(err, abi.ErrInvalidManifest) {
				t.Fatalf("ParseManifest(%s) = %+v, %v; want ErrInvalidManifest", tt.in, got, err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error =\n%s\nwant\n%s", err, tt.msg)
			}
			if !reflect.DeepEqual(got, abi.Manifest{}) {
				t.Errorf("ParseManifest returned %+v with an error", got)
			}
		})
	}
}

func TestManifestValidateZero(t *testing.T) {
	t.Parallel()
	err := abi.Manifest{}.Validate()
	if !errors.Is(err, abi.ErrInvalidManifest) {
		t.Fatalf("Validate() = %v, want ErrInvalidManifest", err)
	}
	want := strings.Join([]string{
		`abi: manifest : invalid manifest: name "" must be 1-64 of [a-z0-9_.-], starting with a letter`,
		`abi: manifest : invalid manifest: version "" is not semantic (MAJOR.MINOR.PATCH)`,
		`abi: manifest : invalid manifest: abi 0 is not supported (host speaks 1)`,
		`abi: manifest : invalid manifest: role "" must be "guard" or "builtin"`,
	}, "\n")
	if err.Error() != want {
		t.Errorf("Validate() =\n%s\nwant\n%s", err, want)
	}
}

func TestManifestQueries(t *testing.T) {
	t.Parallel()
	guard, err := abi.ParseManifest([]byte(validGuard))
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := abi.ParseManifest([]byte(validBuiltin))
	if err != nil {
		t.Fatal(err)
	}
	onlyBefore, err := abi.ParseManifest(edit(t, validGuard, "phases", []string{"before"}, "capabilities", nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"guard grants clock", guard.Grants(abi.CapClock), true},
		{"guard grants state.ledger", guard.Grants(abi.CapStateLedger), true},
		{"guard grants effect.ledger", guard.Grants(abi.CapEffectLedger), true},
		{"guard does not grant random", guard.Grants(abi.CapRandom), false},
		{"guard does not grant effect.node", guard.Grants(abi.CapEffectNode), false},
		{"nothing granted by default", onlyBefore.Grants(abi.CapClock), false},
		{"builtin grants effect.output", builtin.Grants(abi.CapEffectOutput), true},
		{"builtin provides builtin_output_set", builtin.Provides("builtin_output_set"), true},
		{"builtin provides builtin-output-get", builtin.Provides("builtin-output-get"), true},
		{"builtin does not provide other", builtin.Provides("builtin_output_get"), false},
		{"builtin does not provide empty", builtin.Provides(""), false},
		{"guard provides nothing", guard.Provides("builtin_output_set"), false},
		{"guard runs before", guard.RunsIn(abi.PhaseBefore), true},
		{"guard runs after", guard.RunsIn(abi.PhaseAfter), true},
		{"before-only guard not after", onlyBefore.RunsIn(abi.PhaseAfter), false},
		{"builtin runs in no phase", builtin.RunsIn(abi.PhaseBefore), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestManifestRoundTrip: what ParseManifest accepts marshals and parses back
// to the same manifest.
func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{"guard": validGuard, "builtin": validBuiltin} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkManifestRoundTrip(t, []byte(in))
		})
	}
}
