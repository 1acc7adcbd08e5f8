package node_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/node"
)

const skill = `{
  "outputs": {
    "site_id": {"required": true, "sources": ["EVIDENCE"]},
    "web_site_list": {"required": false, "type": "LIST", "fields": ["id"], "sources": ["EVIDENCE"]},
    "version": {"required": false, "sources": ["CONTRACT"], "constant": "v1"}
  },
  "tools": {"query_site": {"label": "查询网站", "extracts": [{"key": "sites", "path": "data.list"}]}}
}`

func nodeView(contract string, mod ...func(*abi.NodeView)) abi.NodeView {
	n := abi.NodeView{SessionID: "s1", TaskID: "t1", NodeID: "n1", Status: "RUNNING", SkillKey: "cms.site",
		Contract: json.RawMessage(contract), ToolNames: []string{"query_site"}, ReservedKeys: []string{"_phase", "_target"}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

const payload = `{"code":0,"data":{"site":{"id":"s-100","count":42},"list":[{"id":"s-100"},{"id":"s-200"}]}}`

var evidence = abi.EvidenceView{Items: []abi.EvidenceItem{
	{ID: "ev1", SourceType: "query", Tool: "query_site", NodeID: "n1", Status: abi.OutcomeSuccess, BusinessOK: true,
		Result: abi.ResultWithData, Payload: json.RawMessage(payload), Size: len(payload),
		Extracts: map[string]json.RawMessage{"sites": json.RawMessage(`[{"id":"s-100"},{"id":"s-200"}]`)},
		Values:   []string{"s-100", "s-200"}},
	{ID: "ev2", SourceType: "query", Tool: "query_site", NodeID: "n1", Status: abi.OutcomeSuccess, BusinessOK: false,
		Result: abi.ResultFailure, Payload: json.RawMessage(`{"code":500}`)},
}}

func write(key, value, source, ref, path string) string {
	b, _ := json.Marshal([]abi.Effect{{Kind: abi.EffectOutputWrite, Payload: mustJSON(abi.OutputWrite{Key: key,
		OutputValue: abi.OutputValue{Value: json.RawMessage(value), SourceType: source, SourceRef: ref, SourcePath: path}})}})
	return string(b)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestOutputSet(t *testing.T) {
	t.Parallel()
	const (
		keys     = "可写的键：site_id、version、web_site_list"
		optional = "；也可以不写，直接调用 builtin_node_finish"
	)
	st := func(n abi.NodeView) map[abi.Capability]any {
		return map[abi.Capability]any{abi.CapStateNode: n, abi.CapStateEvidence: evidence,
			abi.CapStateConversation: abi.ConversationView{UserMessages: []string{"帮我查一下 Spring Sale 网站"}},
			abi.CapStateEntities:     abi.EntitiesView{Entities: []abi.Entity{{Type: "site", ID: "s-300", Name: "老站"}}}}
	}
	skillState := st(nodeView(skill))
	open := st(nodeView(`{"tools":{}}`, func(n *abi.NodeView) {
		n.Shared = map[string]json.RawMessage{"spaceId": json.RawMessage(`"sp-1"`)}
		n.Platform = map[string]json.RawMessage{"organId": json.RawMessage(`1001`)}
	}))
	for _, tt := range []tc{
		{name: "empty key", args: `{"key":"","value":1,"sourceType":"EVIDENCE","sourceRef":"ev1"}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.OutputPathInvalid, msg: "产出键为空。下一步：" + keys + "；来源类型：EVIDENCE、CONTRACT"},
		{name: "platform field name", args: `{"key":"userId","value":1,"sourceType":"PLATFORM","sourceRef":"userId"}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.PlatformFieldForbidden, msg: "userId 是平台保留字段名。下一步：" + keys + "；来源类型：EVIDENCE、CONTRACT"},
		{name: "undeclared key", args: `{"key":"site_name","value":"x","sourceType":"EVIDENCE","sourceRef":"ev1"}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.OutputWriteForbidden, msg: "产出键 site_name 未声明。下一步：" + keys + "；来源类型：EVIDENCE、CONTRACT"},
		{name: "scenario 10: optional output, value differs from the evidence",
			args:  `{"key":"web_site_list","value":[{"id":"s-999"}],"sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.list"}`,
			state: skillState, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 web_site_list 的值与证据 ev1 中 data.list 处的值不一致。下一步：" + keys + "；来源类型：EVIDENCE" + optional},
		{name: "scenario 10: en",
			args:  `{"key":"web_site_list","value":[],"sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.list"}`,
			state: skillState, locale: abi.LocaleEN, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "source check failed: the value of output web_site_list differs from the value at data.list in evidence ev1. " +
				"Next: keys you may write: site_id, version, web_site_list; source types: EVIDENCE; you may also skip it and call builtin_node_finish"},
		{name: "MODEL is never a source", args: `{"key":"site_id","value":"s-100","sourceType":"MODEL","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 的来源类型不能是 MODEL。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "unknown source type", args: `{"key":"site_id","value":"s-100","sourceType":"GUESS","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 的来源类型 GUESS 不存在。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "source not accepted by the output", args: `{"key":"site_id","value":"s-100","sourceType":"USER","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 不接受来源类型 USER。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "missing value", args: `{"key":"site_id","sourceType":"EVIDENCE","sourceRef":"ev1"}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 缺少 value。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "missing sourceRef", args: `{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 缺少 sourceRef。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "unknown evidence", args: `{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":"ev9","sourcePath":"data.site.id"}`,
			state: skillState, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 引用的证据 ev9 不存在。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "evidence of a failed call", args: `{"key":"site_id","value":500,"sourceType":"EVIDENCE","sourceRef":"ev2","sourcePath":"code"}`,
			state: skillState, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 引用的证据 ev2 不是业务成功的调用结果。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "path not in the evidence", args: `{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.nope"}`,
			state: skillState, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：证据 ev1 中没有路径 data.nope。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "value not among the extracted values", args: `{"key":"site_id","value":"s-999","sourceType":"EVIDENCE","sourceRef":"ev1"}`,
			state: skillState, outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_id 的值不在证据 ev1 的抽取内容中。下一步：" + keys + "；来源类型：EVIDENCE"},
		{name: "written from the payload", args: `{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.site.id"}`,
			state: skillState, outcome: abi.OutcomeSuccess, msg: "已写入产出 site_id", effects: write("site_id", `"s-100"`, "EVIDENCE", "ev1", "data.site.id")},
		{name: "written from an extract, bracket index", args: `{"key":"site_id","value":"s-200","sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"sites[1].id"}`,
			state: skillState, outcome: abi.OutcomeSuccess, msg: "已写入产出 site_id", effects: write("site_id", `"s-200"`, "EVIDENCE", "ev1", "sites[1].id")},
		{name: "number text equals a number", args: `{"key":"site_id","value":"42","sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.site.count"}`,
			state: skillState, locale: abi.LocaleEN, outcome: abi.OutcomeSuccess, msg: "output site_id was written",
			effects: write("site_id", `"42"`, "EVIDENCE", "ev1", "data.site.count")},
		{name: "written from the extracted values", args: `{"key":"web_site_list","value":"s-200","sourceType":"EVIDENCE","sourceRef":"ev1"}`,
			state: skillState, outcome: abi.OutcomeSuccess, msg: "已写入产出 web_site_list", effects: write("web_site_list", `"s-200"`, "EVIDENCE", "ev1", "")},
		{name: "contract constant differs", args: `{"key":"version","value":"v2","sourceType":"CONTRACT","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 version 的值与契约常量不一致。下一步：" + keys + "；来源类型：CONTRACT" + optional},
		{name: "contract constant", args: `{"key":"version","value":"v1","sourceType":"CONTRACT","sourceRef":""}`, state: skillState,
			outcome: abi.OutcomeSuccess, msg: "已写入产出 version", effects: write("version", `"v1"`, "CONTRACT", "", "")},
		{name: "no outputs declared: user value", args: `{"key":"site_name","value":"spring sale","sourceType":"USER","sourceRef":""}`, state: open,
			outcome: abi.OutcomeSuccess, msg: "已写入产出 site_name", effects: write("site_name", `"spring sale"`, "USER", "", "")},
		{name: "no outputs declared: user never said it", args: `{"key":"site_name","value":"autumn","sourceType":"USER","sourceRef":""}`, state: open,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 site_name 的值不在用户最近的消息中。下一步：可写的键：任意非平台字段名；来源类型：USER、EVIDENCE、NODE_OUTPUT、SHARED、SESSION、PRIOR_TASK、CONTRACT、PLATFORM" + optional},
		{name: "shared value", args: `{"key":"space","value":"sp-1","sourceType":"SHARED","sourceRef":"spaceId"}`, state: open,
			outcome: abi.OutcomeSuccess, msg: "已写入产出 space", effects: write("space", `"sp-1"`, "SHARED", "spaceId", "")},
		{name: "shared value differs", args: `{"key":"space","value":"sp-2","sourceType":"SHARED","sourceRef":"spaceId"}`, state: open,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 space 的值与 SHARED 中 spaceId 的值不一致。下一步：可写的键：任意非平台字段名；来源类型：USER、EVIDENCE、NODE_OUTPUT、SHARED、SESSION、PRIOR_TASK、CONTRACT、PLATFORM" + optional},
		{name: "platform value", args: `{"key":"organ","value":1001,"sourceType":"PLATFORM","sourceRef":"organId"}`, state: open,
			outcome: abi.OutcomeSuccess, msg: "已写入产出 organ", effects: write("organ", `1001`, "PLATFORM", "organId", "")},
		{name: "prior entity", args: `{"key":"old_site","value":"s-300","sourceType":"PRIOR_TASK","sourceRef":"site"}`, state: open,
			outcome: abi.OutcomeSuccess, msg: "已写入产出 old_site", effects: write("old_site", `"s-300"`, "PRIOR_TASK", "site", "")},
		{name: "prior entity unknown", args: `{"key":"old_site","value":"s-301","sourceType":"PRIOR_TASK","sourceRef":""}`, state: open,
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 old_site 的值不是前情中任何实体的 id。下一步：可写的键：任意非平台字段名；来源类型：USER、EVIDENCE、NODE_OUTPUT、SHARED、SESSION、PRIOR_TASK、CONTRACT、PLATFORM" + optional},
		{name: "no node state", args: `{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":"ev1"}`,
			state:   map[abi.Capability]any{abi.CapStateEvidence: evidence},
			outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: "工具 builtin_output_set 发生未知错误：缺少运行态 state.node。下一步：调用 builtin_node_fail 说明原因"},
	} {
		tt.tool = node.OutputSet
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func TestStateSet(t *testing.T) {
	t.Parallel()
	st := map[abi.Capability]any{abi.CapStateNode: nodeView(skill)}
	for _, tt := range []tc{
		{name: "reserved key", args: `{"key":"_phase","value":"x"}`, state: st, outcome: abi.OutcomeRejected, code: abi.StateKeyReserved,
			msg: "便签键 _phase 是保留键。下一步：换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail"},
		{name: "reserved key, en", args: `{"key":"_target","value":1}`, state: st, locale: abi.LocaleEN, outcome: abi.OutcomeRejected, code: abi.StateKeyReserved,
			msg: "scratch key _target is reserved. Next: change strategy: other arguments, another tool, or finish or fail with what you have"},
		{name: "writes the scratch key", args: `{"key":"candidates","value":["s-100","s-200"]}`, state: st, outcome: abi.OutcomeSuccess,
			msg: "已写入便签 candidates", effects: `[{"kind":"state.set","payload":{"key":"candidates","value":["s-100","s-200"]}}]`},
		{name: "empty key", args: `{"key":"","value":1}`, state: st, outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_state_set 的定义：key 不能为空。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
		{name: "arguments not JSON", args: `{"key":"a","value":}`, state: st, outcome: abi.OutcomeRejected, code: abi.ArgJSONInvalid,
			msg: "参数不是合法 JSON：第 1 行第 20 列：invalid character '}' looking for beginning of value；该处参数原文：{\"key\":\"a\",\"value\":}。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
		{name: "missing value", args: `{"key":"a"}`, state: st, outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_state_set 的定义：value 不能为空。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	} {
		tt.tool = node.StateSet
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func TestEvidenceGet(t *testing.T) {
	t.Parallel()
	// A cut payload of 600 bytes: 3 pages of 256 bytes; "证" (3 bytes)
	// straddles the first boundary and moves whole to page 2.
	long := `"` + strings.Repeat("a", 254) + "证" + strings.Repeat("b", 341) + `"`
	ev := abi.EvidenceView{Items: append(evidence.Items, abi.EvidenceItem{ID: "ev3", Tool: "query_site", Status: abi.OutcomeSuccess,
		BusinessOK: true, Truncated: true, Size: 9000, Payload: json.RawMessage(long)})}
	st := map[abi.Capability]any{abi.CapStateNode: nodeView(skill), abi.CapStateEvidence: ev}
	chunk := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tt := range []tc{
		{name: "empty id", args: `{"evidenceId":" "}`, state: st, outcome: abi.OutcomeRejected, code: abi.EvidencePathInvalid,
			msg: "证据 ID 为空。下一步：只引用本节点或上游工具返回的证据 ID"},
		{name: "unknown id", args: `{"evidenceId":"ev9"}`, state: st, outcome: abi.OutcomeRejected, code: abi.EvidenceNotFound,
			msg: "证据 ev9 不存在。下一步：只引用本节点或上游工具返回的证据 ID"},
		{name: "unknown id, en", args: `{"evidenceId":"ev9"}`, state: st, locale: abi.LocaleEN, outcome: abi.OutcomeRejected, code: abi.EvidenceNotFound,
			msg: "evidence ev9 does not exist. Next: cite only evidence IDs returned by this node's or upstream tools"},
		{name: "whole payload", args: `{"evidenceId":"ev1"}`, state: st, outcome: abi.OutcomeSuccess,
			msg:  "证据 ev1 的原始报文，第 1/1 页",
			data: `{"evidenceId":"ev1","tool":"query_site","page":1,"pages":1,"bytes":` + itoa(len(payload)) + `,"size":` + itoa(len(payload)) + `,"payload":` + payload + `}`},
		{name: "first page of a cut payload", args: `{"evidenceId":"ev3","pageSize":256}`, state: st, outcome: abi.OutcomeSuccess,
			msg:  "证据 ev3 的原始报文，第 1/3 页",
			data: `{"evidenceId":"ev3","tool":"query_site","page":1,"pages":3,"bytes":600,"size":9000,"truncated":true,"chunk":` + chunk(long[:255]) + `,"nextPage":2}`},
		{name: "last page, en", args: `{"evidenceId":"ev3","page":3,"pageSize":256}`, state: st, locale: abi.LocaleEN, outcome: abi.OutcomeSuccess,
			msg:  "raw payload of evidence ev3, page 3 of 3",
			data: `{"evidenceId":"ev3","tool":"query_site","page":3,"pages":3,"bytes":600,"size":9000,"truncated":true,"chunk":` + chunk(long[511:]) + `}`},
		{name: "page out of range", args: `{"evidenceId":"ev3","page":4,"pageSize":100}`, state: st, outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			msg: "参数不符合工具 builtin_evidence_get 的定义：page 超出范围（共 3 页）。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	} {
		tt.tool = node.EvidenceGet
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSessionInfo(t *testing.T) {
	t.Parallel()
	st := map[abi.Capability]any{abi.CapStateNode: nodeView(skill)}
	data := `{"sessionId":"s1","taskId":"t1","nodeId":"n1","status":"RUNNING","skillKey":"cms.site"}`
	for _, tt := range []tc{
		{name: "zh", args: `{}`, state: st, outcome: abi.OutcomeSuccess, msg: "会话 s1，节点 n1，状态 RUNNING", data: data},
		{name: "en", args: `{}`, state: st, locale: abi.LocaleEN, outcome: abi.OutcomeSuccess, msg: "session s1, node n1, status RUNNING", data: data},
		{name: "no node state", args: `{}`, outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: "工具 builtin_session_info 发生未知错误：缺少运行态 state.node。下一步：调用 builtin_node_fail 说明原因"},
	} {
		tt.tool = node.SessionInfo
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}

// TestConformance runs the plugintest kit with one realistic case per tool.
func TestConformance(t *testing.T) {
	t.Parallel()
	path, err := testdata.Build("./plugins/builtins/node/cmd")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]json.RawMessage{string(abi.CapStateNode): mustJSON(nodeView(skill)), string(abi.CapStateEvidence): mustJSON(evidence)}
	ok := plugintest.WantOutcome(abi.OutcomeSuccess, "")
	grant := host.Policy{Capabilities: node.Plugin.Manifest.Capabilities}
	plugintest.Run(t, mod, plugintest.Options{Name: "node", Host: host.Options{CacheDir: testdata.CacheDir(t)}, Policy: grant, Cases: []plugintest.Case{
		{Name: node.OutputSet, Request: abi.Request{Tool: node.OutputSet, State: st,
			Args: json.RawMessage(`{"key":"site_id","value":"s-100","sourceType":"EVIDENCE","sourceRef":"ev1","sourcePath":"data.site.id"}`)}, Want: ok},
		{Name: node.StateSet, Request: abi.Request{Tool: node.StateSet, Args: json.RawMessage(`{"key":"a","value":1}`), State: st}, Want: ok},
		{Name: node.EvidenceGet, Request: abi.Request{Tool: node.EvidenceGet, Args: json.RawMessage(`{"evidenceId":"ev1"}`), State: st}, Want: ok},
		{Name: node.SessionInfo, Request: abi.Request{Tool: node.SessionInfo, Args: json.RawMessage(`{}`), State: st}, Want: ok},
	}})
}
