package chain_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/services"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// The skill every chain test runs: a read that finds a space, and a gated
// write whose spaceId comes from that read's evidence.
const skill = `{
  "tools": {
    "query_space": {
      "label": "查询空间",
      "args": {"spaceName": {"sources": ["USER", "MODEL"], "label": "空间名"}},
      "success": {"path": "code", "op": "EQ", "value": 200},
      "error": {"code": "code", "message": "msg"},
      "extracts": [{"key": "spaces", "path": "data.spaces", "entity": {"type": "space"}}],
      "timeoutMs": 200,
      "retry": {"maxAttempts": 1}
    },
    "create_site": {
      "label": "创建网站",
      "sideEffect": "WRITE",
      "idempotencyKey": ["title", "spaceId"],
      "args": {
        "title": {"sources": ["USER"], "label": "网站标题"},
        "spaceId": {"from": "evidence.spaces.0.id", "sources": ["EVIDENCE"], "label": "空间"}
      },
      "success": {"path": "code", "op": "EQ", "value": 200},
      "error": {"code": "code", "message": "msg"},
      "extracts": [{"key": "site", "path": "data", "entity": {"type": "site"}}],
      "timeoutMs": 200
    }
  }
}`

var schemas = map[string]string{
	"query_site":  `{"type":"object","properties":{}}`,
	"query_space": `{"type":"object","additionalProperties":false,"required":["spaceName"],"properties":{"spaceName":{"type":"string","minLength":1}}}`,
	"create_site": `{"type":"object","additionalProperties":false,"required":["title","spaceId"],"properties":{"title":{"type":"string","maxLength":40},"spaceId":{"type":"integer"},"theme":{"type":"string","enum":["light","dark"]}}}`,
}

var parsed = func() *contract.Contract {
	c, _, err := contract.Parse("site.builder", []byte(skill))
	if err != nil {
		panic(err)
	}
	return c
}()

func toolJSON(name string) json.RawMessage {
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(skill), &m); err != nil {
		panic(err)
	}
	return m["tools"][name]
}

// views is the state of node n1 before the call: the user asked for a site
// titled "Spring Launch" in the 市场部 space, and a query found it.
func views(mod func(v map[abi.Capability]any)) map[string]json.RawMessage {
	v := map[abi.Capability]any{
		abi.CapStateNode: abi.NodeView{SessionID: "s1", TaskID: "t1", NodeID: "n1", Status: "RUNNING", SkillKey: "site.builder",
			Contract: json.RawMessage(skill), ToolNames: []string{"query_space", "create_site"}},
		abi.CapStateConversation: abi.ConversationView{UserMessages: []string{"帮我在市场部空间建一个网站，标题叫 Spring Launch"}},
		abi.CapStateFollowUp:     abi.FollowUpView{},
		abi.CapStateEvidence: abi.EvidenceView{Items: []abi.EvidenceItem{{ID: "ev_1", SourceType: "query", Locator: "query_space", Tool: "query_space",
			NodeID: "n1", Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData,
			Extracts: map[string]json.RawMessage{"spaces": json.RawMessage(`[{"id":42,"name":"市场部"}]`)},
			Counts:   map[string]int{"spaces": 1}, Values: []string{"42", "市场部"}}}},
		abi.CapStateEntities:     abi.EntitiesView{},
		abi.CapStateLedger:       abi.LedgerView{},
		abi.CapStateApproval:     abi.ApprovalView{},
		abi.CapStateFingerprints: abi.FingerprintView{Limit: 3, StateDigest: "state-1"},
	}
	if mod != nil {
		mod(v)
	}
	out := map[string]json.RawMessage{}
	for k, val := range v {
		b, err := json.Marshal(val)
		if err != nil {
			panic(err)
		}
		out[string(k)] = b
	}
	return out
}

// sitedArgs are create_site's arguments once bound.
const siteArgs = `{"title":"Spring Launch","spaceId":42}`

func argsDigest(args string) string {
	d, err := services.Digest([]byte(`{"bound":`+args+`}`), "bound")
	if err != nil {
		panic(err)
	}
	return hex.EncodeToString(d[:])
}

var approved = func(v map[abi.Capability]any) {
	v[abi.CapStateApproval] = abi.ApprovalView{Approved: &abi.ApprovedCall{Tool: "create_site", ArgsDigest: argsDigest(siteArgs)}}
}

func ledger(state abi.LedgerState) func(v map[abi.Capability]any) {
	key := parsed.Tools["create_site"].KeyFor([]byte(siteArgs))
	return func(v map[abi.Capability]any) {
		ok := true
		res := abi.Success("工具 create_site 调用成功", json.RawMessage(`{"code":200,"data":{"id":"site_7"}}`))
		v[abi.CapStateLedger] = abi.LedgerView{Entries: []abi.LedgerEntry{{Tool: "create_site", Key: key, State: state, BusinessOK: &ok, Result: &res}}}
	}
}

var fixedClock = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// guards loads the seven first-party guards, as wasm (the first-party
// module bound to each guard, as warden loads them) or natively.
func guards(tb testing.TB, wasm bool) map[string]chain.Guard {
	tb.Helper()
	out := map[string]chain.Guard{}
	if !wasm {
		for _, p := range plugins.Guards() {
			out[p.Name] = chain.Native(p.Name, p.Plugin, nil, guest.WithClock(func() time.Time { return fixedClock }))
		}
		return out
	}
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(tb), Clock: func() time.Time { return fixedClock }, Profile: guestProfile})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close(ctx) })
	path, err := testdata.Build("./plugins/firstparty/cmd")
	if err != nil {
		tb.Fatal(err)
	}
	shared, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(plugins.Guards()))
	for _, fp := range plugins.Guards() {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			src := host.Source{Name: fp.File, Bytes: host.SelectPlugin(shared, fp.Plugin.Manifest.Name)}
			p, err := h.Load(ctx, src, host.Policy{Limits: abi.Limits{TimeoutMs: 5000}, Capabilities: fp.Plugin.Manifest.Capabilities})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			out[name] = chain.Wasm(name, p)
			mu.Unlock()
		}(fp.Name)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return out
}

// script is a business tool that answers each call by tool name.
type script map[string]func(args json.RawMessage) (chain.Response, error)

func (s script) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	f, ok := s[name]
	if !ok {
		return chain.Response{}, fmt.Errorf("no script for %s: %w", name, chain.ErrUnreachable)
	}
	return f(args)
}

func answer(body string) func(json.RawMessage) (chain.Response, error) {
	return func(json.RawMessage) (chain.Response, error) {
		return chain.Response{Content: json.RawMessage(body)}, nil
	}
}

func fail(err error) func(json.RawMessage) (chain.Response, error) {
	return func(json.RawMessage) (chain.Response, error) { return chain.Response{}, err }
}

const spaces = `{"code":200,"msg":"ok","data":{"spaces":[{"id":42,"name":"市场部"}]}}`

func call(tool, args string) chain.Call {
	return chain.Call{Tenant: "acme", CallID: "call_1", Tool: tool, Args: []byte(args), Contract: toolJSON(tool),
		ToolContract: parsed.Tools[tool], Schema: json.RawMessage(schemas[tool])}
}

// TestClassification is TOOL_OBSERVATION §5 over the whole first-party
// chain: every producer's case, with the outcome and code it must give.
func TestClassification(t *testing.T) {
	t.Parallel()
	for _, wasm := range []bool{false, true} {
		name := "native"
		if wasm {
			name = "wasm"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fp := guards(t, wasm)
			for _, tt := range classification {
				t.Run(tt.name, func(t *testing.T) {
					c, err := chain.New(fp, nil, &chain.Invoker{Caller: tt.tool, DefaultRetry: &contract.Retry{MaxAttempts: 1}})
					if err != nil {
						t.Fatal(err)
					}
					c.Visible = func(tool string) bool { return tool != "drop_database" }
					cl := call(tt.call[0], tt.call[1])
					cl.State = views(tt.state)
					res := c.Run(context.Background(), cl)
					o := res.Observation
					if o.Outcome != tt.outcome || o.Code != tt.code || res.Invoked != tt.invoked {
						t.Fatalf("got %v %s invoked=%v (%s)\nwant %v %s invoked=%v\ntrace %+v", o.Outcome, o.Code, res.Invoked, o.Message(), tt.outcome, tt.code, tt.invoked, res.Trace)
					}
					want := tt.message
					if want == "" {
						want = messages[tt.name]
					}
					if o.Message() != want {
						t.Fatalf("message\n got %s\nwant %s", o.Message(), want)
					}
					var kinds []string
					for _, e := range res.Effects {
						kinds = append(kinds, e.Kind)
					}
					if got := strings.Join(kinds, ","); got != tt.effects {
						t.Fatalf("effects %q, want %q", got, tt.effects)
					}
				})
			}
		})
	}
}

var classification = []struct {
	name    string
	call    [2]string
	state   func(map[abi.Capability]any)
	tool    script
	outcome abi.Outcome
	code    abi.Code
	invoked bool
	message string
	effects string
}{
	// DefaultToolInvoker
	{"tool returns", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": answer(spaces)},
		abi.OutcomeSuccess, "", true, "", "evidence.register,entity.record,fingerprint.record"},
	{"timeout", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(chain.ErrTimeout)},
		abi.OutcomeFailed, abi.ToolTimeout, true, "", "evidence.register,fingerprint.record"},
	{"unreachable", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(chain.ErrUnreachable)},
		abi.OutcomeFailed, abi.ToolUnreachable, true, "", "evidence.register,fingerprint.record"},
	{"io", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(chain.ErrIO)},
		abi.OutcomeFailed, abi.ToolIOError, true, "", "evidence.register,fingerprint.record"},
	{"mcp rpc", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(chain.ErrRPC)},
		abi.OutcomeFailed, abi.MCPRPCError, true, "", "evidence.register,fingerprint.record"},
	{"mcp invalid params", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(chain.ErrInvalidParams)},
		abi.OutcomeFailed, abi.MCPInvalidParams, true, "", "evidence.register,fingerprint.record"},
	{"unknown error", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": fail(fmt.Errorf("boom"))},
		abi.OutcomeFailed, abi.ToolError, true, "", "evidence.register,fingerprint.record"},
	{"mcp tool error", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil,
		script{"query_space": func(json.RawMessage) (chain.Response, error) {
			return chain.Response{IsError: true, Text: "space service down"}, nil
		}},
		abi.OutcomeFailed, abi.MCPToolError, true, "", "evidence.register,fingerprint.record"},
	// ResponseContractInterceptor
	{"business failure", [2]string{"query_space", `{"spaceName":"市场部"}`}, nil, script{"query_space": answer(`{"code":50001,"msg":"空间服务维护中"}`)},
		abi.OutcomeFailed, abi.ToolBusinessFailed, true,
		"业务失败 [50001]：空间服务维护中。下一步：根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail",
		"evidence.register,fingerprint.record"},
	// ArgPolicyInterceptor
	{"arguments not JSON", [2]string{"query_space", `{"spaceName":`}, nil, nil, abi.OutcomeRejected, abi.ArgJSONInvalid, false, "", ""},
	{"no arguments for a tool that requires none", [2]string{"query_site", ``}, nil, script{"query_site": func(args json.RawMessage) (chain.Response, error) {
		if string(args) != `{}` {
			return chain.Response{}, fmt.Errorf("the tool received %q, want {}", args)
		}
		return chain.Response{Content: json.RawMessage(`{"code":200,"data":{"sites":[]}}`)}, nil
	}}, abi.OutcomeSuccess, "", true, "", "evidence.register,fingerprint.record"},
	{"no arguments for a tool that requires some", [2]string{"query_space", ``}, nil, nil, abi.OutcomeRejected, abi.ArgRejected, false, "", ""},
	{"only whitespace for a tool that requires some", [2]string{"query_space", " \n\t"}, nil, nil, abi.OutcomeRejected, abi.ArgRejected, false, "", ""},
	{"arguments not an object", [2]string{"query_space", `["市场部"]`}, nil, nil, abi.OutcomeRejected, abi.ArgRejected, false, "", ""},
	{"arguments against the schema", [2]string{"create_site", `{"title":"Spring Launch","theme":"neon"}`}, nil, nil, abi.OutcomeRejected, abi.ArgRejected, false, "", ""},
	// ParamContractInterceptor
	{"title the user never gave", [2]string{"create_site", `{"title":"Autumn Sale"}`}, nil, nil, abi.OutcomeRejected, abi.ParamProvenanceAskUser, false, "", ""},
	// FingerprintInterceptor
	{"same call three times", [2]string{"query_space", `{"spaceName":"市场部"}`}, func(v map[abi.Capability]any) {
		d := argsDigest(`{"spaceName":"市场部"}`)
		rec := abi.FingerprintRecord{Tool: "query_space", ArgsDigest: d, ResultDigest: "r", StateDigest: "state-1", Outcome: abi.OutcomeSuccess}
		v[abi.CapStateFingerprints] = abi.FingerprintView{Limit: 3, StateDigest: "state-1", Recent: []abi.FingerprintRecord{rec, rec, rec}}
	}, nil, abi.OutcomeRejected, abi.FingerprintTrip, false, "", ""},
	// WriteGateInterceptor
	{"write needs approval", [2]string{"create_site", `{"title":"Spring Launch"}`}, nil, nil, abi.OutcomeDeferred, abi.ApprovalRequired, false,
		"该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 create_site", ""},
	{"write in flight", [2]string{"create_site", `{"title":"Spring Launch"}`}, ledger(abi.LedgerStarted), nil, abi.OutcomeDeferred, abi.WriteInFlight, false, "", ""},
	{"write pending verify", [2]string{"create_site", `{"title":"Spring Launch"}`}, ledger(abi.LedgerUnknown), nil, abi.OutcomeDeferred, abi.WritePendingVerify, false, "", ""},
	{"reuse a successful write", [2]string{"create_site", `{"title":"Spring Launch"}`}, ledger(abi.LedgerSuccess), nil, abi.OutcomeSuccess, "", false, "", ""},
	{"approved write runs", [2]string{"create_site", `{"title":"Spring Launch"}`}, approved, script{"create_site": answer(`{"code":200,"msg":"ok","data":{"id":"site_7","title":"Spring Launch"}}`)},
		abi.OutcomeSuccess, "", true, "", "ledger.reserve,ledger.settle,evidence.register,entity.record,fingerprint.record"},
	{"approved write fails: ask the user", [2]string{"create_site", `{"title":"Spring Launch"}`}, approved, script{"create_site": answer(`{"code":40901,"msg":"标题已被占用"}`)},
		abi.OutcomeFailed, abi.ToolBusinessFailed, true,
		"业务失败 [40901]：标题已被占用。下一步：用 builtin_node_follow_up 向用户说明失败原因并询问如何处理；用户不再继续时 builtin_node_fail；不要自行改用其它写操作补救",
		"ledger.reserve,ledger.settle,evidence.register,fingerprint.record"},
	{"approved write times out: never repeated", [2]string{"create_site", `{"title":"Spring Launch"}`}, approved, script{"create_site": fail(chain.ErrTimeout)},
		abi.OutcomeFailed, abi.ToolTimeout, true, "", "ledger.reserve,ledger.settle,evidence.register,fingerprint.record"},
	// DefaultReActLoop
	{"tool not in the catalog", [2]string{"drop_database", `{}`}, nil, nil, abi.OutcomeRejected, abi.CatalogDenied, false, "", ""},
}

// messages are the exact texts of the rows that do not spell theirs out.
var messages = map[string]string{
	"tool returns":       "工具 query_space 调用成功",
	"timeout":            "工具 query_space 在 200ms 内没有返回。下一步：缩小查询范围后重试；写操作不要重复调用，等待核实",
	"unreachable":        "工具 query_space 不可达。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因",
	"io":                 "调用工具 query_space 时发生 IO 异常：tool I/O error。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因",
	"mcp rpc":            "调用 MCP 工具 query_space 时发生 RPC 错误：tool RPC error。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因",
	"mcp invalid params": "MCP 工具 query_space 报告参数错误：tool invalid params。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"unknown error":      "工具 query_space 发生未知错误：boom。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因",
	"mcp tool error":     "MCP 工具 query_space 返回错误：space service down。下一步：根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail",
	"arguments not JSON": "参数不是合法 JSON：第 1 行第 14 列：unexpected end of JSON input；该处参数原文：{\"spaceName\":。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"no arguments for a tool that requires none":    "工具 query_site 调用成功",
	"no arguments for a tool that requires some":    "参数不符合工具 query_space 的定义：spaceName: required property is missing。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"only whitespace for a tool that requires some": "参数不符合工具 query_space 的定义：spaceName: required property is missing。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"arguments not an object":                       "参数不符合工具 query_space 的定义：应为 JSON 对象，实际为数组。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"arguments against the schema":                  "参数不符合工具 create_site 的定义：theme: \"neon\" is not one of [\"light\",\"dark\"]。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
	"title the user never gave":                     "参数 [网站标题] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 网站标题",
	"same call three times":                         "相同参数已连续成功调用 query_space 3 次，已触发熔断，节点失败。下一步：调用 builtin_node_fail 说明原因",
	"write in flight":                               "写操作 create_site 正在进行中。下一步：等待该写操作结束，不要再次调用",
	"write pending verify":                          "写操作 create_site 的结果尚待核实。下一步：等待写结果核实完成，不要再次调用该写工具",
	"reuse a successful write":                      "写操作 create_site 此前已对同一业务动作执行成功，本次未再调用，复用上次结果：工具 create_site 调用成功",
	"approved write runs":                           "工具 create_site 调用成功",
	"approved write times out: never repeated":      "工具 create_site 在 200ms 内没有返回。下一步：等待写结果核实完成，不要再次调用该写工具",
	"tool not in the catalog":                       "工具 drop_database 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具",
}

// TestClassificationBuiltins is the builtin rows of TOOL_OBSERVATION §5,
// through the wasm build of the control builtins: a rule the model broke is
// REJECTED with the builtin's own code and next step; any other failure of a
// builtin is FAILED (TOOL_ERROR); a builtin that crashes is FAILED too.
func TestClassificationBuiltins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	path, err := testdata.Build("./plugins/builtins/control/cmd")
	if err != nil {
		t.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Load(ctx, src, host.Policy{Capabilities: control.Plugin.Manifest.Capabilities})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tool    string
		args    string
		state   map[string]json.RawMessage
		outcome abi.Outcome
		code    abi.Code
		message string
	}{
		{"a rule the model broke (ToolRejectedException)", "builtin_node_approval", `{"summary":"建站","toolName":"create_site"}`, views(nil),
			abi.OutcomeRejected, abi.ApprovalNotGated, "申请确认前没有被写入闸门拦下的写调用。下一步：先直接调用写工具，被拦下后再按提示申请确认"},
		{"any other builtin failure", "builtin_node_approval", `{"summary":"建站","toolName":"create_site"}`,
			map[string]json.RawMessage{string(abi.CapStateApproval): json.RawMessage(`{"gated":{"tool":"create_site","args":{},"argsDigest":"d"}}`)},
			abi.OutcomeFailed, abi.ToolError, "工具 builtin_node_approval 发生未知错误：缺少运行态 state.node。下一步：调用 builtin_node_fail 说明原因"},
		{"a tool the plugin does not provide", "builtin_drop_everything", `{}`, nil,
			abi.OutcomeRejected, abi.CatalogDenied, "工具 builtin_drop_everything 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := p.Builtin(ctx, "acme", &abi.Request{Tool: tt.tool, Args: json.RawMessage(tt.args), State: tt.state})
			o := v.Observation
			if o == nil || o.Outcome != tt.outcome || o.Code != tt.code || o.Message() != tt.message {
				t.Fatalf("got %+v\nwant %v %s %q", o, tt.outcome, tt.code, tt.message)
			}
		})
	}
}
