package scenario_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/testdata"
)

// grantScenario attaches the slowinstance fixture, a guard whose manifest
// asks for the clock, with the plugins entry and expectations given.
const grantScenario = `
user: 查一下市场部空间
agent: {agent_name: a, identity_desc: a, mission_desc: a, boundary_desc: a, style_desc: a, principle_desc: a}
skills:
  - skill_key: cms.space
    manual: 用 query_space 查空间。
    toolNames: [query_space]
    contract:
      tools: {query_space: {success: {path: code, op: EQ, value: 200}}}
      guards: [{ref: slowinstance@1.0.0, phase: before}]
  - skill_key: other
    toolNames: []
    contract: {}
tools:
  scripted:
    - {name: query_space, schema: {type: object}, responses: [{code: 200, data: {spaceId: sp-1}}]}
model:
  - tool_calls: [{name: query_space, arguments: {}}]
  - expect: {tool: query_space, outcome: SUCCESS}
    tool_calls: [{name: builtin_node_finish, arguments: {output: sp-1}}]
`

// TestTenantPluginGrants checks that a scenario's module gets only the
// capabilities its plugins entry grants: asking for more is refused at
// install (and then its skill cannot load), granted it runs.
func TestTenantPluginGrants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, extra string
		setupErr    string // "" = the run passes
	}{
		{"granted", "plugins: {slowinstance@1.0.0: {build: ./internal/testdata/guests/slowinstance, capabilities: [clock]}}\nexpect: {status: DONE, tools: {calls: {query_space: 1}}}\n", ""},
		{"not granted", "plugins: {slowinstance@1.0.0: {build: ./internal/testdata/guests/slowinstance}}\n",
			"plugins.slowinstance@1.0.0: host: load slowinstance@1.0.0: plugin asks for capabilities it is not granted: slowinstance@1.0.0 asks for clock; it may have none (not granted: clock)"},
		{"not granted, expected", "plugins: {slowinstance@1.0.0: {build: ./internal/testdata/guests/slowinstance}}\nskill: other\nmodel: [{tool_calls: [{name: builtin_node_fail, arguments: {reason: x}}]}]\n" +
			"expect: {status: FAILED, install: [{plugin: slowinstance@1.0.0, contains: \"slowinstance@1.0.0 asks for clock; it may have none\"}], load: [{skill: cms.space, rule: W1, contains: slowinstance@1.0.0 is not installed}]}\n", ""},
		{"the module is not the ref", "plugins: {slowinstance@2.0.0: {build: ./internal/testdata/guests/slowinstance, capabilities: [clock]}}\n",
			"plugins.slowinstance@2.0.0: the module is slowinstance@1.0.0 (sha256:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := grantScenario + tt.extra
			if strings.Contains(tt.extra, "\nmodel:") {
				src = src[:strings.Index(src, "model:")] + tt.extra
			}
			s, err := scenario.Parse([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			s.Name, s.File = tt.name, "../../examples/scenarios/plugins/grants.yaml"
			rep, err := scenario.Run(context.Background(), s, options(t, true))
			if tt.setupErr != "" {
				if !errors.Is(err, scenario.ErrSetup) || !strings.Contains(err.Error(), tt.setupErr) {
					t.Fatalf("got %v, want a setup error with %q", err, tt.setupErr)
				}
				return
			}
			if err != nil || !rep.Passed() {
				t.Fatalf("%v %v", err, rep.Mismatches)
			}
		})
	}
}

// pathScenario attaches domainguard by the ref REF, a module named in
// plugins by a path beside the scenario file.
const pathScenario = `
user: 建一个网站，域名 evil.org
agent: {agent_name: a, identity_desc: a, mission_desc: a, boundary_desc: a, style_desc: a, principle_desc: a}
plugins: {"REF": ./domainguard.wasm}
skills:
  - skill_key: cms.website
    toolNames: [create_website]
    contract:
      tools: {create_website: {sideEffect: WRITE, args: {domain: {sources: [USER]}}, success: {path: code, op: EQ, value: 200}}}
      guards: [{ref: "REF", phase: before, position: after:ParamContract, config: {tool: create_website, allowed: [example.com]}}]
tools:
  scripted:
    - {name: create_website, write: true, schema: {type: object}, responses: [{code: 200}]}
model:
  - tool_calls: [{name: create_website, arguments: {domain: evil.org}}]
  - expect: {tool: create_website, outcome: REJECTED, code: ARG_REJECTED}
    tool_calls: [{name: builtin_node_fail, arguments: {reason: 域名不允许}}]
expect:
  status: FAILED
  ordered:
    - {kind: TOOL, tool: create_website, outcome: REJECTED, code: ARG_REJECTED, guard: "REF", plugin: domainguard@0.1.0}
  tools: {calls: {create_website: 0}}
`

// TestTenantPluginPath runs a module given by a path relative to the
// scenario file, keyed and attached by name@version or by digest.
func TestTenantPluginPath(t *testing.T) {
	t.Parallel()
	wasm, err := testdata.Build("./examples/guards/domainguard/cmd")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "domainguard.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"domainguard@0.1.0", "sha256:" + host.Digest(b)} {
		t.Run(ref, func(t *testing.T) {
			t.Parallel()
			s, err := scenario.Parse([]byte(strings.ReplaceAll(pathScenario, "REF", ref)))
			if err != nil {
				t.Fatal(err)
			}
			s.Name, s.File = ref, filepath.Join(dir, "path.yaml")
			rep, err := scenario.Run(context.Background(), s, options(t, true))
			if err != nil || !rep.Passed() {
				t.Fatalf("%v %v", err, rep.Mismatches)
			}
		})
	}
}
