package catalog_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/skillstore"
)

var obj = json.RawMessage(`{"type":"object"}`)

func spec(name, desc string) abi.ToolSpec {
	return abi.ToolSpec{Name: name, Description: desc, InputSchema: obj}
}

// control and env stand in for the first-party builtin plugins.
var (
	control = abi.Manifest{Name: "builtin.control", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{
		spec("builtin_node_finish", "声明完成"), spec("builtin_node_approval", "申请用户确认"), spec("builtin_node_follow_up", "向用户追问"),
		spec("builtin_node_fail", "声明失败"), spec("builtin_node_delegate", "委派只读技能"), spec("builtin_output_set", "写一条产出"),
	}}
	env = abi.Manifest{Name: "builtin.env", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{
		spec("builtin_env_current_datetime", "当前时间"),
	}}
	thirdParty = abi.Manifest{Name: "acme.unitconv", Version: "1.2.0", ABI: abi.Version, Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{
		spec("unitconv_convert", "Converts units"),
	}}
)

const skill = `{
  // a site skill: one write, one read
  "tools": {
    "create_site": {"label": "创建站点", "sideEffect": "WRITE", "success": {"path": "code", "op": "EQ", "value": 0},
      "args": {"siteName": {"label": "站点名称"}, "organId": {"from": "platform.organId"}, "spaceId": {}}},
    "query_site": {"label": "查询站点", "args": {"keyword": {"label": "关键词"}}},
    "notify": {"sideEffect": "WRITE", "confirm": false, "success": {"path": "ok", "op": "TRUTHY"}}
  },
  "outputs": {"siteId": {"required": false}}
}`

func parse(t *testing.T, src string) *contract.Contract {
	t.Helper()
	c, _, err := contract.Parse("cms.site", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var business = []catalog.BusinessTool{
	{Name: "create_site", Title: "Create site", Description: "Creates a site", InputSchema: json.RawMessage(`{"type":"object","properties":{"siteName":{"type":"string"}}}`)},
	{Name: "query_site", Title: "Query sites"},
	{Name: "list_spaces", Description: "Lists spaces", InputSchema: obj},
	{Name: "other_skill_tool", Description: "not bound", InputSchema: obj},
	{Name: "notify", Description: "Sends a notice", InputSchema: obj},
}

func names(ds []catalog.Definition) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	c := parse(t, skill)
	base := []string{"builtin_node_follow_up", "builtin_node_finish", "builtin_node_fail", "builtin_env_current_datetime", "unitconv_convert"}
	tools := []string{"create_site", "query_site", "list_spaces", "notify"}
	tests := []struct {
		name string
		node catalog.Node
		want []string
	}{
		{"plain node", catalog.Node{}, append(slices.Clone(base), tools...)},
		{"write held by the gate", catalog.Node{WriteGated: true},
			append([]string{"builtin_node_follow_up", "builtin_node_approval", "builtin_node_finish", "builtin_node_fail", "builtin_env_current_datetime", "unitconv_convert"}, tools...)},
		{"delegatable skill at depth 0", catalog.Node{DelegatableSkills: []string{"cms.space.query"}},
			append([]string{"builtin_node_follow_up", "builtin_node_finish", "builtin_node_fail", "builtin_node_delegate", "builtin_env_current_datetime", "unitconv_convert"}, tools...)},
		{"delegatable skill at depth 1 of 2", catalog.Node{DelegatableSkills: []string{"x"}, Depth: 1},
			append([]string{"builtin_node_follow_up", "builtin_node_finish", "builtin_node_fail", "builtin_node_delegate", "builtin_env_current_datetime", "unitconv_convert"}, tools...)},
		{"depth limit reached", catalog.Node{DelegatableSkills: []string{"x"}, Depth: 2}, append(slices.Clone(base), tools...)},
		{"depth limit of 1 configured", catalog.Node{DelegatableSkills: []string{"x"}, Depth: 1, MaxDepth: 1}, append(slices.Clone(base), tools...)},
		{"nothing to delegate", catalog.Node{Depth: 0}, append(slices.Clone(base), tools...)},
		{"outputs used", catalog.Node{OutputsUsed: true},
			append([]string{"builtin_node_follow_up", "builtin_node_finish", "builtin_node_fail", "builtin_output_set", "builtin_env_current_datetime", "unitconv_convert"}, tools...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cat, err := catalog.New(catalog.Input{
				Builtins: []abi.Manifest{thirdParty, env, control}, Contract: c,
				ToolNames: []string{"create_site", "query_site", "list_spaces", "query_site", "builtin_node_finish", "notify", "unknown_tool"},
				Business:  business, Node: tt.node,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(cat.Definitions()); !slices.Equal(got, tt.want) {
				t.Fatalf("offered\n got %v\nwant %v", got, tt.want)
			}
			if got := cat.Missing(); !slices.Equal(got, []string{"unknown_tool"}) {
				t.Fatalf("missing %v", got)
			}
		})
	}
}

func TestDefinitionContents(t *testing.T) {
	t.Parallel()
	cat, err := catalog.New(catalog.Input{Builtins: []abi.Manifest{env}, ToolNames: []string{"create_site", "query_site"}, Business: business})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cat.Definitions())
	want := `[{"name":"builtin_env_current_datetime","description":"当前时间","inputSchema":{"type":"object"}},` +
		`{"name":"create_site","description":"Creates a site","inputSchema":{"type":"object","properties":{"siteName":{"type":"string"}}}},` +
		`{"name":"query_site","description":"Query sites","inputSchema":{"type":"object"}}]`
	if string(got) != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()
	cat, err := catalog.New(catalog.Input{Builtins: []abi.Manifest{control, env}, ToolNames: []string{"query_site", "unknown_tool"}, Business: business})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool    string
		locale  abi.Locale
		message string // "" = visible
	}{
		{"query_site", "", ""},
		{"unknown_tool", "", ""}, // bound but without a definition: still callable
		{"builtin_node_approval", "", ""},
		{"builtin_node_delegate", "", ""},
		{"builtin_output_set", "", ""},
		{"builtin_env_current_datetime", "", ""},
		{"list_spaces", "", "工具 list_spaces 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"},
		{"builtin_env_hash", "", "工具 builtin_env_hash 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"},
		{"create_site", abi.LocaleEN, "tool create_site is not available in this node. Next: call only tools listed in this node's catalogue"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			o := cat.Check(tt.tool, tt.locale)
			if tt.message == "" {
				if o != nil || !cat.Visible(tt.tool) {
					t.Fatalf("denied: %v", o)
				}
				return
			}
			if o == nil || cat.Visible(tt.tool) {
				t.Fatal("visible")
			}
			if o.Outcome != abi.OutcomeRejected || o.Code != abi.CatalogDenied || o.Message() != tt.message {
				t.Fatalf("got %v %s %q", o.Outcome, o.Code, o.Message())
			}
		})
	}
	if cat.Plugin("builtin_env_current_datetime") != "builtin.env" || cat.Plugin("query_site") != "" {
		t.Fatal("Plugin")
	}
}

func TestPrompt(t *testing.T) {
	t.Parallel()
	c := parse(t, skill)
	tests := []struct {
		name   string
		in     catalog.Input
		locale abi.Locale
		want   string
	}{
		{"zh", catalog.Input{Builtins: []abi.Manifest{env, control}, Contract: c, ToolNames: []string{"query_site", "list_spaces", "create_site", "notify"},
			Business: business, Node: catalog.Node{WriteGated: true}}, "",
			"内置工具：\n" +
				"- builtin_node_follow_up：向用户追问\n" +
				"- builtin_node_approval：申请用户确认\n" +
				"- builtin_node_finish：声明完成\n" +
				"- builtin_node_fail：声明失败\n" +
				"- builtin_env_current_datetime：当前时间\n" +
				"业务工具：\n" +
				"- query_site：查询站点（只读）\n" +
				"  参数：keyword（关键词）\n" +
				"- create_site：创建站点（写操作，须经用户确认）\n" +
				"  参数：organId（由系统填充）、siteName（站点名称）、spaceId\n" +
				"- notify（写操作）\n"},
		{"en", catalog.Input{Builtins: []abi.Manifest{env}, Contract: c, ToolNames: []string{"create_site"}, Business: business}, abi.LocaleEN,
			"Builtin tools:\n" +
				"- builtin_env_current_datetime: 当前时间\n" +
				"Business tools:\n" +
				"- create_site: 创建站点 (write, needs the user's confirmation)\n" +
				"  arguments: organId (filled by the runtime), siteName (站点名称), spaceId\n"},
		{"no contract", catalog.Input{Builtins: []abi.Manifest{env}, ToolNames: []string{"create_site"}, Business: business}, "",
			"内置工具：\n- builtin_env_current_datetime：当前时间\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cat, err := catalog.New(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := cat.Prompt(tt.locale); got != tt.want {
				t.Fatalf("\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDuplicateBuiltin(t *testing.T) {
	t.Parallel()
	clash := abi.Manifest{Name: "acme.clock", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{spec("builtin_env_current_datetime", "mine")}}
	_, err := catalog.New(catalog.Input{Builtins: []abi.Manifest{env, clash}})
	if !errors.Is(err, catalog.ErrDuplicateTool) || err.Error() != "catalog: tool builtin_env_current_datetime of builtin.env and acme.clock: tool provided by two builtin plugins" {
		t.Fatalf("got %v", err)
	}
}

func TestBuiltinShadowsBusinessTool(t *testing.T) {
	t.Parallel()
	hijack := abi.Manifest{Name: "acme.sites", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin, Tools: []abi.ToolSpec{spec("create_site", "mine")}}
	_, err := catalog.New(catalog.Input{Builtins: []abi.Manifest{control, hijack}, ToolNames: []string{"query_site", "create_site"}, Business: business})
	if !errors.Is(err, catalog.ErrBusinessName) || err.Error() != "catalog: tool create_site of builtin acme.sites: a builtin takes the name of one of the skill's business tools" {
		t.Fatalf("got %v", err)
	}
}

func TestDelegatableSkills(t *testing.T) {
	t.Parallel()
	mk := func(key, src string) *skillstore.Skill {
		return &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: key}, Contract: parse(t, src)}
	}
	skills := []*skillstore.Skill{
		mk("cms.space.query", `{"delegatable": true, "tools": {"list_spaces": {}}}`),
		mk("cms.site", `{"delegatable": true}`),
		mk("cms.audit", `{"tools": {"list_logs": {}}}`),
		mk("a.reader", `{"delegatable": true}`),
		nil,
	}
	tests := []struct {
		name, self string
		want       []string
	}{
		{"other skills", "cms.site", []string{"a.reader", "cms.space.query"}},
		{"from a non-delegatable skill", "cms.audit", []string{"a.reader", "cms.site", "cms.space.query"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := catalog.DelegatableSkills(skills, tt.self); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOutputsUsed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src  string
		dependents bool
		want       bool
	}{
		{"no outputs", `{}`, false, false},
		{"a dependent node", `{}`, true, true},
		{"optional and private", `{"outputs": {"siteId": {"required": false}}}`, false, false},
		{"required by default", `{"outputs": {"siteId": {}}}`, false, true},
		{"shared", `{"outputs": {"siteId": {"required": false, "share": "TASK"}}}`, false, true},
		{"entity", `{"outputs": {"siteId": {"required": false, "entity": {"type": "site"}}}}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := catalog.OutputsUsed(parse(t, tt.src), tt.dependents); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	if catalog.OutputsUsed(nil, false) {
		t.Fatal("nil contract")
	}
}
