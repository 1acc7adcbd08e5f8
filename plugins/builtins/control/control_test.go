package control_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// skill is the contract of the test skill: one gated write, two reads, a
// required output fed by evidence and an optional one.
const skill = `{
  "target": "",
  "outputs": {
    "site_id": {"required": true, "sources": ["EVIDENCE"]},
    "web_site_list": {"required": false, "type": "LIST", "fields": ["id"], "sources": ["EVIDENCE"]},
    "version": {"required": false, "sources": ["CONTRACT"], "constant": "v1"}
  },
  "tools": {
    "create_site": {
      "label": "创建网站", "sideEffect": "WRITE", "success": {"path": "code", "op": "EQ", "value": 0},
      "args": {
        "name": {"sources": ["USER"], "label": "网站名称"},
        "phone": {"sources": ["USER"], "label": "联系电话", "sensitive": true},
        "secret": {"sources": ["USER"], "label": "密钥", "sensitive": true},
        "organId": {"from": "platform.organId"},
        "spaceId": {"sources": ["EVIDENCE"], "label": "空间", "missing": {"action": "CALL_TOOL", "tool": "list_spaces"}},
        "lines[].goodsCode": {"sources": ["USER"], "label": "商品编码"}
      }
    },
    "list_spaces": {"label": "查询空间"},
    "query_site": {"label": "查询网站"}
  }
}`

// plain is a contract without outputs.
const plain = `{"tools": {"query_site": {"label": "查询网站"}}}`

func node(contract string, mod ...func(*abi.NodeView)) abi.NodeView {
	n := abi.NodeView{SessionID: "s1", TaskID: "t1", NodeID: "n1", Status: "RUNNING", SkillKey: "cms.site",
		Contract: json.RawMessage(contract), ToolNames: []string{"create_site", "list_spaces", "query_site"}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

// withExtra adds fields the NodeView type does not carry (state.node.skills).
func withExtra(n abi.NodeView, extra map[string]any) map[string]any {
	b, _ := json.Marshal(n)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k, v := range extra {
		m[k] = v
	}
	return m
}

const gatedArgs = `{"name":"春季促销","phone":"13812345678","organId":1001,"spaceId":"sp-1",` +
	`"lines":[{"goodsCode":"G1"},{"goodsCode":"G2"}],"secret":"abc123","note":"hi","empty":null}`

var gated = abi.ApprovalView{Gated: &abi.GatedCall{Tool: "create_site", CallID: "c1", Args: json.RawMessage(gatedArgs), ArgsDigest: "d1"}}

const (
	nextWriteFirst = "先直接调用写工具，被拦下后再按提示申请确认"
	nextFixArgs    = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	nextFail       = "调用 builtin_node_fail 说明原因"
)

func TestApproval(t *testing.T) {
	t.Parallel()
	full := map[abi.Capability]any{abi.CapStateApproval: gated, abi.CapStateNode: node(skill)}
	question := "创建网站春季促销\n网站名称：春季促销\n联系电话：138****5678\n空间：sp-1\n商品编码[1]：G1\n商品编码[2]：G2\n密钥：****\nnote：hi"
	questionEN := "create site\n网站名称: 春季促销\n联系电话: 138****5678\n空间: sp-1\n商品编码[1]: G1\n商品编码[2]: G2\n密钥: ****\nnote: hi"
	suspend := func(q string) string {
		b, _ := json.Marshal([]abi.Effect{{Kind: abi.EffectNodeSuspend, Payload: mustJSON(abi.NodeSuspend{
			Kind: abi.SuspendApproval, Question: q, Tool: "create_site", Args: json.RawMessage(gatedArgs), ArgsDigest: "d1",
			Summary: []abi.ArgLine{{Label: "网站名称", Value: "春季促销"}, {Label: "联系电话", Value: "138****5678"}, {Label: "空间", Value: "sp-1"},
				{Label: "商品编码[1]", Value: "G1"}, {Label: "商品编码[2]", Value: "G2"}, {Label: "密钥", Value: "****"}, {Label: "note", Value: "hi"}}})}})
		return string(b)
	}
	for _, tt := range []tc{
		{name: "scenario 2: nothing gated", args: `{"summary":"创建网站","toolName":"create_site"}`,
			state:   map[abi.Capability]any{abi.CapStateApproval: abi.ApprovalView{}, abi.CapStateNode: node(skill)},
			outcome: abi.OutcomeRejected, code: abi.ApprovalNotGated,
			msg: "申请确认前没有被写入闸门拦下的写调用。下一步：" + nextWriteFirst},
		{name: "scenario 2: no approval view, en", args: `{"summary":"x","toolName":"create_site"}`, locale: abi.LocaleEN,
			state:   map[abi.Capability]any{abi.CapStateNode: node(skill)},
			outcome: abi.OutcomeRejected, code: abi.ApprovalNotGated,
			msg: "there is no write call held by the write gate to approve. Next: call the write tool directly first; ask for approval only when it is held"},
		{name: "scenario 3: wrong tool name", args: `{"summary":"删除网站","toolName":"delete_site"}`, state: full,
			outcome: abi.OutcomeRejected, code: abi.ApprovalToolMismatch,
			msg: "申请确认的工具 delete_site 与被拦下的写工具 create_site 不一致。下一步：调用 builtin_node_approval 时 toolName 填被拦下的写工具 create_site"},
		{name: "scenario 3: empty tool name, en", args: `{"summary":"x"}`, state: full, locale: abi.LocaleEN,
			outcome: abi.OutcomeRejected, code: abi.ApprovalToolMismatch,
			msg: "approval asked for , but the write held by the gate is create_site. Next: call builtin_node_approval with toolName create_site, the write that is held"},
		{name: "gated tool is not a write of the contract", args: `{"summary":"x","toolName":"list_spaces"}`,
			state: map[abi.Capability]any{abi.CapStateNode: node(skill),
				abi.CapStateApproval: abi.ApprovalView{Gated: &abi.GatedCall{Tool: "list_spaces", Args: json.RawMessage(`{}`), ArgsDigest: "d2"}}},
			outcome: abi.OutcomeRejected, code: abi.WriteContractIncomplete,
			msg: "申请确认的工具 list_spaces 不是本契约的写工具。下一步：" + nextWriteFirst},
		{name: "empty summary", args: `{"summary":"  ","toolName":"create_site"}`, state: full,
			outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_node_approval 的定义：summary 不能为空。下一步：" + nextFixArgs},
		{name: "suspends with the masked digest", args: `{"summary":"创建网站春季促销","toolName":"create_site"}`, state: full,
			outcome: abi.OutcomeSuccess, msg: "已请求用户确认写操作 create_site，节点挂起等待确认", effects: suspend(question)},
		{name: "suspends, en", args: `{"summary":"create site","toolName":"create_site"}`, state: full, locale: abi.LocaleEN,
			outcome: abi.OutcomeSuccess, msg: "the user was asked to confirm write create_site; the node waits for the answer", effects: suspend(questionEN)},
		{name: "no node state", args: `{"summary":"x","toolName":"create_site"}`,
			state:   map[abi.Capability]any{abi.CapStateApproval: gated},
			outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: "工具 builtin_node_approval 发生未知错误：缺少运行态 state.node。下一步：" + nextFail},
	} {
		tt.tool = control.Approval
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func suspendFollowUp(q string, fields, suggestions []string) string {
	b, _ := json.Marshal([]abi.Effect{{Kind: abi.EffectNodeSuspend, Payload: mustJSON(abi.NodeSuspend{
		Kind: abi.SuspendFollowUp, Question: q, ExpectedFields: fields, Suggestions: suggestions})}})
	return string(b)
}

func TestFollowUp(t *testing.T) {
	t.Parallel()
	const (
		nextWriteDirectly = "直接调用写工具，确认由审批流程完成，不要用追问口头确认"
		nextChange        = "换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail"
		ok                = "已向用户追问，节点挂起等待回答"
	)
	answered := abi.FollowUpView{Answered: []abi.FollowUp{{Question: "网站名称叫什么？", ExpectedFields: []string{"name"}, Answer: "春季促销"}}}
	conv := abi.ConversationView{UserMessages: []string{"帮我创建一个叫春季促销的网站", "春季促销"}}
	emptyCall := func(n *abi.NodeView) {
		n.LastBusiness = &abi.CallSummary{Tool: "query_site", Outcome: abi.OutcomeSuccess, Empty: true, BusinessOK: true}
	}
	dataCall := func(n *abi.NodeView) {
		n.LastBusiness = &abi.CallSummary{Tool: "query_site", Outcome: abi.OutcomeSuccess, BusinessOK: true}
	}
	failedCall := func(n *abi.NodeView) {
		n.LastBusiness = &abi.CallSummary{Tool: "query_site", Outcome: abi.OutcomeFailed}
	}
	withQuery := abi.EvidenceView{Items: []abi.EvidenceItem{{ID: "ev1", Tool: "list_spaces", NodeID: "n1", Status: abi.OutcomeSuccess,
		BusinessOK: true, Result: abi.ResultWithData}}}
	emptyQuery := abi.EvidenceView{Items: []abi.EvidenceItem{{ID: "ev1", Tool: "list_spaces", NodeID: "n1", Status: abi.OutcomeSuccess,
		BusinessOK: true, Empty: true, Result: abi.ResultEmpty}}}
	st := func(n abi.NodeView, extra ...any) map[abi.Capability]any {
		m := map[abi.Capability]any{abi.CapStateNode: n, abi.CapStateFollowUp: answered, abi.CapStateConversation: conv}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(abi.Capability)] = extra[i+1]
		}
		return m
	}
	for _, tt := range []tc{
		{name: "empty question", args: `{"question":""}`, state: st(node(skill)),
			outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_node_follow_up 的定义：question 不能为空。下一步：" + nextFixArgs},
		{name: "scenario 4: asked again after the answer", args: `{"question":"网站名称叫什么？","expectedFields":["name"]}`, state: st(node(skill)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpAnswered,
			msg: "这个问题用户本轮刚回答过：春季促销。下一步：按用户的回答继续，不要再问同一个问题"},
		{name: "scenario 4: current answer, en", args: `{"question":"What is the site name?","expectedFields":["name"]}`, locale: abi.LocaleEN,
			state: st(node(skill), abi.CapStateFollowUp, abi.FollowUpView{Current: &abi.FollowUp{Question: "what is the site name",
				ExpectedFields: []string{"name"}, Answer: "Spring sale"}}),
			outcome: abi.OutcomeRejected, code: abi.FollowUpAnswered,
			msg: "the user just answered this question: Spring sale. Next: continue with the user's answer; do not ask the same question again"},
		{name: "same question, other fields, is asked", args: `{"question":"网站名称叫什么？","expectedFields":["phone"]}`, state: st(node(skill)),
			outcome: abi.OutcomeSuccess, msg: ok, effects: suspendFollowUp("网站名称叫什么？", []string{"phone"}, nil)},
		{name: "scenario 5: verbal confirmation of a write", args: `{"question":"确认要创建网站春季促销吗？"}`, state: st(node(skill, emptyCall)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：不能用追问口头确认写操作。下一步：" + nextWriteDirectly},
		{name: "scenario 5: confirmation while a write is gated", args: `{"question":"请确认网站名称","expectedFields":["name"]}`,
			state:   st(node(skill), abi.CapStateApproval, gated),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：不能用追问口头确认写操作。下一步：" + nextWriteDirectly},
		{name: "scenario 5: echoing the user", args: `{"question":"您是要帮我创建一个叫春季促销的网站吗？"}`, state: st(node(skill, emptyCall)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：问题复述了用户刚说过的话。下一步：" + nextWriteDirectly},
		{name: "scenario 5: en", args: `{"question":"Shall I create the site Spring sale now?"}`, locale: abi.LocaleEN, state: st(node(skill, emptyCall)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "the follow-up question has no grounds: a write may not be confirmed verbally through a follow-up question. Next: call the write tool directly; confirmation happens through approval, not a follow-up question"},
		{name: "fields not askable", args: `{"question":"机构和标题是什么？","expectedFields":["organId","title"]}`, state: st(node(skill)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：字段 [organId、title] 不是本技能允许向用户询问的参数（可询问：lines[].goodsCode、name、phone、secret）。下一步：" + nextChange},
		{name: "evidence field before any query", args: `{"question":"用哪个空间？","expectedFields":["spaceId"]}`, state: st(node(skill)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：字段 [spaceId] 须来自查询结果，但本节点还没有非空的成功查询。下一步：先调用 list_spaces 查到 spaceId 的取值，再用查到的值调用"},
		{name: "evidence field after an empty query", args: `{"question":"用哪个空间？","expectedFields":["spaceId"]}`,
			state:   st(node(skill), abi.CapStateEvidence, emptyQuery),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：字段 [spaceId] 须来自查询结果，但本节点还没有非空的成功查询。下一步：先调用 list_spaces 查到 spaceId 的取值，再用查到的值调用"},
		{name: "evidence field: let the user choose", args: `{"question":"用哪个空间？","expectedFields":["spaceId"],"suggestions":["sp-1","sp-2"]}`,
			state:   st(node(skill), abi.CapStateEvidence, withQuery),
			outcome: abi.OutcomeSuccess, msg: ok, effects: suspendFollowUp("用哪个空间？", []string{"spaceId"}, []string{"sp-1", "sp-2"})},
		{name: "user field by leaf name", args: `{"question":"商品编码是多少？","expectedFields":["goodsCode"]}`, state: st(node(skill)),
			outcome: abi.OutcomeSuccess, msg: ok, effects: suspendFollowUp("商品编码是多少？", []string{"goodsCode"}, nil)},
		{name: "no fields before any business call", args: `{"question":"您想做什么？"}`, state: st(node(skill)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：没有待补参数，且本节点还没有调用过业务工具。下一步：先调用业务工具完成任务，再调用 builtin_node_finish"},
		{name: "no fields after a call with data", args: `{"question":"您要哪一个？"}`, state: st(node(skill, dataCall)),
			outcome: abi.OutcomeRejected, code: abi.FollowUpUngrounded,
			msg: "追问没有依据：没有待补参数，且最近一次业务调用 query_site 已成功返回数据。下一步：" + nextChange},
		{name: "no fields after an empty result: clarify", args: `{"question":"没有找到这个网站，您说的是哪一个？"}`, state: st(node(skill, emptyCall)),
			outcome: abi.OutcomeSuccess, msg: ok, effects: suspendFollowUp("没有找到这个网站，您说的是哪一个？", nil, nil)},
		{name: "no fields after a business failure, en", args: `{"question":"The site was not found. Which one do you mean?"}`, locale: abi.LocaleEN,
			state:   st(node(skill, failedCall)),
			outcome: abi.OutcomeSuccess, msg: "the question was sent to the user; the node waits for the answer",
			effects: suspendFollowUp("The site was not found. Which one do you mean?", nil, nil)},
	} {
		tt.tool = control.FollowUp
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func TestFinish(t *testing.T) {
	t.Parallel()
	ev := abi.EvidenceView{Items: []abi.EvidenceItem{{ID: "ev1", Tool: "query_site", NodeID: "n1", Status: abi.OutcomeSuccess, BusinessOK: true}}}
	written := func(src string, v string) func(*abi.NodeView) {
		return func(n *abi.NodeView) {
			n.Outputs = map[string]abi.OutputValue{"site_id": {Value: json.RawMessage(v), SourceType: src, SourceRef: "ev1"}}
		}
	}
	done := written("EVIDENCE", `"s-100"`)
	finished := func(out string) string {
		b, _ := json.Marshal([]abi.Effect{{Kind: abi.EffectNodeFinish, Payload: mustJSON(abi.NodeFinish{Output: out})}})
		return string(b)
	}
	st := func(n abi.NodeView, ledger ...abi.LedgerEntry) map[abi.Capability]any {
		return map[abi.Capability]any{abi.CapStateNode: n, abi.CapStateEvidence: ev, abi.CapStateLedger: abi.LedgerView{Entries: ledger}}
	}
	for _, tt := range []tc{
		{name: "1 missing output", args: `{"output":"  "}`, state: st(node(skill, done)),
			outcome: abi.OutcomeRejected, code: abi.FinishMissingOutput,
			msg: "完成说明 output 为空。下一步：在 output 中写明完成情况后再调用 builtin_node_finish"},
		{name: "1 arguments that are not JSON are not a missing output", args: `{"output":"done`, state: st(node(skill, done)),
			outcome: abi.OutcomeRejected, code: abi.ArgJSONInvalid,
			msg: "参数不是合法 JSON：第 1 行第 16 列：unexpected end of JSON input；该处参数原文：{\"output\":\"done。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
		{name: "1 arguments that are not an object", args: `["done"]`, state: st(node(skill, done)), locale: abi.LocaleEN,
			outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "arguments do not match tool builtin_node_finish: expected a JSON object. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
		{name: "1 no arguments at all", args: ` `, state: st(node(skill, done)),
			outcome: abi.OutcomeRejected, code: abi.FinishMissingOutput,
			msg: "完成说明 output 为空。下一步：在 output 中写明完成情况后再调用 builtin_node_finish"},
		{name: "2 unsettled write", args: `{"output":"done"}`,
			state:   st(node(skill, done), abi.LedgerEntry{Tool: "create_site", Key: "k", State: abi.LedgerUnknown, NodeID: "n1"}),
			outcome: abi.OutcomeRejected, code: abi.FinishOpenEvidence,
			msg: "写操作 create_site 尚未结算（UNKNOWN）。下一步：等待写操作 create_site 结算后再完成"},
		{name: "2 unsettled write, en", args: `{"output":"done"}`, locale: abi.LocaleEN,
			state:   st(node(skill, done), abi.LedgerEntry{Tool: "create_site", Key: "k", State: abi.LedgerUnknownPreCall, NodeID: "n1"}),
			outcome: abi.OutcomeRejected, code: abi.FinishOpenEvidence,
			msg: "write create_site is not settled yet (UNKNOWN_PRE_CALL). Next: wait until write create_site is settled before finishing"},
		{name: "3 required output missing; other node's open write ignored", args: `{"output":"done"}`,
			state:   st(node(skill), abi.LedgerEntry{Tool: "create_site", Key: "k", State: abi.LedgerStarted, NodeID: "n0"}),
			outcome: abi.OutcomeRejected, code: abi.FinishOutputMissing,
			msg: "必填产出 [site_id] 尚未写入。下一步：可写的键：site_id；来源类型：EVIDENCE"},
		{name: "3 required output empty", args: `{"output":"done"}`, state: st(node(skill, written("EVIDENCE", `""`))),
			outcome: abi.OutcomeRejected, code: abi.FinishOutputEmpty,
			msg: "必填产出 [site_id] 的值为空。下一步：可写的键：site_id；来源类型：EVIDENCE"},
		{name: "3 required output from an illegal source", args: `{"output":"done"}`, state: st(node(skill, written("USER", `"s-100"`))),
			outcome: abi.OutcomeRejected, code: abi.FinishOutputSource,
			msg: "产出 [site_id] 的来源不合法：来源类型 USER 不被接受（允许：EVIDENCE）。下一步：可写的键：site_id；来源类型：EVIDENCE"},
		{name: "4 target not done", args: `{"output":"done"}`,
			state: st(node(skill, done, func(n *abi.NodeView) {
				n.Target, n.DoneTools = "create_site", []string{"list_spaces"}
			})),
			outcome: abi.OutcomeRejected, code: abi.FinishNeedTarget,
			msg: "完成目标 create_site 尚未成功执行。下一步：先成功执行 create_site，再调用 builtin_node_finish"},
		{name: "5 no business call", args: `{"output":"done"}`,
			state:   map[abi.Capability]any{abi.CapStateNode: node(plain)},
			outcome: abi.OutcomeRejected, code: abi.FinishNeedBusiness,
			msg: "本节点还没有完成过任何业务调用。下一步：先调用业务工具完成任务，再调用 builtin_node_finish"},
		{name: "5 an empty result counts as completed", args: `{"output":"没有找到"}`,
			state: map[abi.Capability]any{abi.CapStateNode: node(plain), abi.CapStateEvidence: abi.EvidenceView{Items: []abi.EvidenceItem{
				{ID: "ev2", Tool: "query_site", NodeID: "n1", Status: abi.OutcomeSuccess, BusinessOK: true, Empty: true}}}},
			outcome: abi.OutcomeSuccess, msg: "节点已完成", effects: finished("没有找到")},
		{name: "5 nothing to call", args: `{"output":"你好"}`,
			state:   map[abi.Capability]any{abi.CapStateNode: node(plain, func(n *abi.NodeView) { n.ToolNames = nil })},
			outcome: abi.OutcomeSuccess, msg: "节点已完成", effects: finished("你好")},
		{name: "citation of unknown evidence", args: `{"output":"网站是 s-100 [ev:ev1]，另见 [ev:ev9]"}`, state: st(node(skill, done)),
			outcome: abi.OutcomeRejected, code: abi.CitationInvalid,
			msg: "引用的证据 ev9 不存在于本节点或上游证据中。下一步：只引用本节点或上游工具返回的证据 ID"},
		{name: "done with citations", args: `{"output":"网站是 s-100 [ev:ev1]"}`,
			state: st(node(skill, done, func(n *abi.NodeView) {
				n.Target, n.DoneTools = "create_site", []string{"create_site"}
			}), abi.LedgerEntry{Tool: "create_site", Key: "k", State: abi.LedgerSuccess, NodeID: "n1"}),
			outcome: abi.OutcomeSuccess, msg: "节点已完成", effects: finished("网站是 s-100 [ev:ev1]")},
		{name: "done, en", args: `{"output":"site s-100"}`, locale: abi.LocaleEN, state: st(node(skill, done)),
			outcome: abi.OutcomeSuccess, msg: "the node is done", effects: finished("site s-100")},
	} {
		tt.tool = control.Finish
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	for _, tt := range []tc{
		{name: "fails the node", args: `{"reason":"空间不存在，无法创建网站"}`, outcome: abi.OutcomeSuccess, msg: "节点已标记为失败",
			effects: `[{"kind":"node.fail","payload":{"reason":"空间不存在，无法创建网站"}}]`},
		{name: "fails the node, en", args: `{"reason":"no \"space\""}`, locale: abi.LocaleEN, outcome: abi.OutcomeSuccess,
			msg: "the node is marked failed", effects: `[{"kind":"node.fail","payload":{"reason":"no \"space\""}}]`},
		{name: "empty reason", args: `{"reason":" "}`, outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_node_fail 的定义：reason 不能为空。下一步：" + nextFixArgs},
		{name: "reason not a string", args: `{"reason":42}`, locale: abi.LocaleEN, outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "arguments do not match tool builtin_node_fail: reason must not be empty. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
	} {
		tt.tool = control.Fail
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func TestDelegate(t *testing.T) {
	t.Parallel()
	const next = "改为自行调用工具完成，或调用 builtin_node_fail 说明原因"
	base := func(mod ...func(*abi.NodeView)) map[abi.Capability]any {
		n := node(skill, append([]func(*abi.NodeView){func(n *abi.NodeView) {
			n.Delegatable = []string{"cms.space.query", "cms.user.query"}
			n.Depth = 1
		}}, mod...)...)
		return map[abi.Capability]any{abi.CapStateNode: withExtra(n, map[string]any{"skills": []string{"cms.site", "cms.space.query", "cms.user.query", "cms.order.write"}})}
	}
	delegated := func(skill, objective string) string {
		b, _ := json.Marshal([]abi.Effect{{Kind: abi.EffectNodeDelegate, Payload: mustJSON(abi.NodeDelegate{SkillKey: skill, Objective: objective})}})
		return string(b)
	}
	for _, tt := range []tc{
		{name: "unknown skill", args: `{"skillKey":"cms.nothing"}`, state: base(),
			outcome: abi.OutcomeRejected, code: abi.SkillNotFound, msg: "技能 cms.nothing 不存在。下一步：" + next},
		{name: "unknown skill without a skill list", args: `{"skillKey":"cms.order.write"}`,
			state:   map[abi.Capability]any{abi.CapStateNode: node(skill)},
			outcome: abi.OutcomeRejected, code: abi.SkillNotFound, msg: "技能 cms.order.write 不存在。下一步：" + next},
		{name: "not delegatable", args: `{"skillKey":"cms.order.write"}`, state: base(),
			outcome: abi.OutcomeRejected, code: abi.DelegateForbidden,
			msg: "不允许委派技能 cms.order.write：该技能不可委派（可委派：cms.space.query、cms.user.query）。下一步：" + next},
		{name: "own skill", args: `{"skillKey":"cms.site"}`, state: base(),
			outcome: abi.OutcomeRejected, code: abi.DelegateForbidden, msg: "不允许委派技能 cms.site：不能委派本节点自己的技能。下一步：" + next},
		{name: "depth limit", args: `{"skillKey":"cms.space.query"}`, state: base(func(n *abi.NodeView) { n.Depth = 2 }),
			outcome: abi.OutcomeRejected, code: abi.DelegateForbidden, msg: "不允许委派技能 cms.space.query：已到委派层级上限 2。下一步：" + next},
		{name: "configured depth limit, en", args: `{"skillKey":"cms.space.query"}`, locale: abi.LocaleEN,
			state:   base(func(n *abi.NodeView) { n.DelegateMaxDepth = 1 }),
			outcome: abi.OutcomeRejected, code: abi.DelegateForbidden,
			msg: "delegating skill cms.space.query is not allowed: the delegation depth limit 1 is reached. Next: do it with your own tools instead, or call builtin_node_fail"},
		{name: "repeated after failure", args: `{"skillKey":"cms.space.query","objective":"查空间"}`,
			state: base(func(n *abi.NodeView) {
				n.Delegations = []abi.Delegation{{SkillKey: "cms.space.query", Objective: "查空间", Status: "FAILED"}}
			}),
			outcome: abi.OutcomeRejected, code: abi.DelegateRepeated, msg: "相同技能 cms.space.query 与目标的委派已结束且未成功。下一步：" + next},
		{name: "other objective is allowed", args: `{"skillKey":"cms.space.query","objective":"查默认空间"}`,
			state: base(func(n *abi.NodeView) {
				n.Delegations = []abi.Delegation{{SkillKey: "cms.space.query", Objective: "查空间", Status: "SKIPPED"}}
			}),
			outcome: abi.OutcomeSuccess, msg: "已委派技能 cms.space.query 作为前置节点，前置节点结束后本节点继续",
			effects: delegated("cms.space.query", "查默认空间")},
		{name: "delegates", args: `{"skillKey":"cms.user.query"}`, state: base(),
			outcome: abi.OutcomeSuccess, msg: "已委派技能 cms.user.query 作为前置节点，前置节点结束后本节点继续",
			effects: delegated("cms.user.query", "")},
		{name: "empty skill key", args: `{}`, state: base(), outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_node_delegate 的定义：skillKey 不能为空。下一步：" + nextFixArgs},
	} {
		tt.tool = control.Delegate
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

// TestConformance runs the plugintest kit with one realistic case per tool.
func TestConformance(t *testing.T) {
	t.Parallel()
	path, err := testdata.Build("./plugins/builtins/control/cmd")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	state := func(v map[abi.Capability]any) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, x := range v {
			out[string(k)] = mustJSON(x)
		}
		return out
	}
	n := node(skill, func(n *abi.NodeView) {
		n.LastBusiness = &abi.CallSummary{Tool: "query_site", Outcome: abi.OutcomeSuccess, Empty: true, BusinessOK: true}
		n.Delegatable = []string{"cms.space.query"}
		n.Outputs = map[string]abi.OutputValue{"site_id": {Value: json.RawMessage(`"s-1"`), SourceType: "EVIDENCE", SourceRef: "ev1"}}
	})
	st := state(map[abi.Capability]any{abi.CapStateNode: n, abi.CapStateApproval: gated})
	ok := plugintest.WantOutcome(abi.OutcomeSuccess, "")
	grant := host.Policy{Capabilities: control.Plugin.Manifest.Capabilities}
	plugintest.Run(t, mod, plugintest.Options{Name: "control", Host: host.Options{CacheDir: testdata.CacheDir(t)}, Policy: grant, Cases: []plugintest.Case{
		{Name: control.FollowUp, Request: abi.Request{Tool: control.FollowUp, Args: json.RawMessage(`{"question":"没有找到，您说的是哪个网站？"}`), State: st}, Want: ok},
		{Name: control.Approval, Request: abi.Request{Tool: control.Approval, Args: json.RawMessage(`{"summary":"创建网站","toolName":"create_site"}`), State: st}, Want: ok},
		{Name: control.Finish, Request: abi.Request{Tool: control.Finish, Args: json.RawMessage(`{"output":"done"}`), State: st}, Want: ok},
		{Name: control.Fail, Request: abi.Request{Tool: control.Fail, Args: json.RawMessage(`{"reason":"no"}`), State: st}, Want: ok},
		{Name: control.Delegate, Request: abi.Request{Tool: control.Delegate, Args: json.RawMessage(`{"skillKey":"cms.space.query"}`), State: st}, Want: ok},
	}})
}
