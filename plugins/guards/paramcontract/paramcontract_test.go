//go:build !wasip1

package paramcontract_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
)

var pair = testdata.NewPair(paramcontract.Plugin, "./plugins/guards/paramcontract/cmd", time.Time{})

// The state views every case sees.
const (
	node = `{"sessionId":"s1","taskId":"t1","nodeId":"n2","inputs":{"orderNo":"SO-1"},` +
		`"outputs":{"draftId":{"value":"D-9","sourceType":"EVIDENCE","sourceRef":"ev-1"}},` +
		`"shared":{"spaceId":"S2"},"session":{"lang":"zh"},"platform":{"userId":1001}}`
	entities = `{"entities":[{"type":"customer","id":"C1","name":"Acme"}]}`
	// This node's evidence, an upstream node's, and a failed call whose
	// values never count.
	evidence = `{"items":[` +
		`{"id":"ev-1","tool":"list_tags","nodeId":"n2","status":"SUCCESS","businessOk":true,"result":"success_with_data","empty":false,` +
		`"extracts":{"tags":[{"id":"t1","name":"Red"},{"id":"t2","name":"Blue"}]},"values":["t1","Red","t2","Blue"]},` +
		`{"id":"ev-0","tool":"get_order","nodeId":"n2","status":"FAILED","businessOk":false,"result":"failure","empty":false,"values":["bad"]},` +
		`{"id":"ev-up","tool":"find_buyer","nodeId":"n1","status":"SUCCESS","businessOk":true,"result":"success_with_data","empty":false,` +
		`"extracts":{"buyer":{"name":"Acme Trading","taxNo":"91310000MA1FL0XXXX"}}}]}`
	conversation = `{"userMessages":["请给 Acme 开票，标题写 Q3 季度报告","ＡＢＣ　Corp 也要一张"]}`
	followup     = `{"current":{"question":"买方是谁？","expectedFields":["buyerName"],"answer":"就是上次那家"}}`

	nextProv = "改用用户提供或查询得到的值；无法取得时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因"
	nextFail = "调用 builtin_node_fail 说明原因"
)

type tcase struct {
	name       string
	args       string // the tool contract's args object
	callArgs   string
	bound      string
	provenance map[string]string
	locale     abi.Locale
	code       abi.Code // "" = pass
	message    string
	facts      []abi.Fact
}

func fact(path, source, detail string) abi.Fact {
	return abi.Fact{Path: path, Source: source, Detail: detail}
}

var cases = []tcase{
	// Step 3: every kind of source, matching and not.
	{name: "USER: the current follow-up expects the parameter", args: `{"buyerName":{"sources":["USER"]}}`,
		callArgs: `{"buyerName":"Beta Ltd"}`, facts: []abi.Fact{fact("buyerName", "USER", "")}},
	{name: "USER: a user message contains the normalised value", args: `{"title":{"sources":["USER"]}}`,
		callArgs: `{"title":"Q3季度报告"}`, facts: []abi.Fact{fact("title", "USER", "")}},
	{name: "USER: full-width letters and spaces are normalised", args: `{"buyer":{"sources":["USER"]}}`,
		callArgs: `{"buyer":"abc corp"}`, facts: []abi.Fact{fact("buyer", "USER", "")}},
	{name: "USER: a one-character value never matches", args: `{"title":{"sources":["USER"]}}`,
		callArgs: `{"title":"Q"}`, code: abi.ParamProvenanceAskUser,
		message: "参数 [title] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 title"},
	{name: "USER: not said by the user, asked by label", args: `{"title":{"sources":["USER"],"label":"标题"}}`,
		callArgs: `{"title":"年度总结"}`, code: abi.ParamProvenanceAskUser,
		message: "参数 [标题] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 标题"},
	{name: "EVIDENCE: this node's extract", args: `{"tagId":{"sources":["EVIDENCE"]}}`,
		callArgs: `{"tagId":"t2"}`, facts: []abi.Fact{fact("tagId", "EVIDENCE", "ev-1")}},
	{name: "EVIDENCE: an upstream node's extract", args: `{"buyer":{"sources":["EVIDENCE"]}}`,
		callArgs: `{"buyer":"Acme Trading"}`, facts: []abi.Fact{fact("buyer", "EVIDENCE", "ev-up")}},
	{name: "EVIDENCE: a failed call's value does not count", args: `{"tagId":{"sources":["EVIDENCE"]}}`,
		callArgs: `{"tagId":"bad"}`, code: abi.ParamProvenanceRejected, message: "参数 [tagId] 的来源不可信。下一步：" + nextProv},
	{name: "NODE_OUTPUT: an output", args: `{"draftId":{"sources":["NODE_OUTPUT"]}}`,
		callArgs: `{"draftId":"D-9"}`, facts: []abi.Fact{fact("draftId", "NODE_OUTPUT", "")}},
	{name: "NODE_OUTPUT: an input", args: `{"orderNo":{"sources":["NODE_OUTPUT"]}}`,
		callArgs: `{"orderNo":"SO-1"}`, facts: []abi.Fact{fact("orderNo", "NODE_OUTPUT", "")}},
	{name: "NODE_OUTPUT: another value", args: `{"draftId":{"sources":["NODE_OUTPUT"]}}`,
		callArgs: `{"draftId":"D-1"}`, code: abi.ParamProvenanceRejected, message: "参数 [draftId] 的来源不可信。下一步：" + nextProv},
	{name: "SHARED", args: `{"spaceId":{"sources":["SHARED"]}}`,
		callArgs: `{"spaceId":"S2"}`, facts: []abi.Fact{fact("spaceId", "SHARED", "")}},
	{name: "SHARED: another value", args: `{"spaceId":{"sources":["SHARED"]}}`,
		callArgs: `{"spaceId":"S3"}`, code: abi.ParamProvenanceRejected, message: "参数 [spaceId] 的来源不可信。下一步：" + nextProv},
	{name: "SESSION", args: `{"lang":{"sources":["SESSION"]}}`,
		callArgs: `{"lang":"zh"}`, facts: []abi.Fact{fact("lang", "SESSION", "")}},
	{name: "SESSION: another value", args: `{"lang":{"sources":["SESSION"]}}`,
		callArgs: `{"lang":"en"}`, code: abi.ParamProvenanceRejected, message: "参数 [lang] 的来源不可信。下一步：" + nextProv},
	{name: "PRIOR_TASK: an entity id", args: `{"customerId":{"sources":["PRIOR_TASK"]}}`,
		callArgs: `{"customerId":"C1"}`, facts: []abi.Fact{fact("customerId", "PRIOR_TASK", "customer:C1")}},
	{name: "PRIOR_TASK: not an entity id", args: `{"customerId":{"sources":["PRIOR_TASK"]}}`,
		callArgs: `{"customerId":"C9"}`, code: abi.ParamProvenanceRejected, message: "参数 [customerId] 的来源不可信。下一步：" + nextProv},
	{name: "PLATFORM never matches", args: `{"userId":{"sources":["PLATFORM"]}}`,
		callArgs: `{"userId":1001}`, code: abi.ParamProvenanceRejected, message: "参数 [userId] 的来源不可信。下一步：" + nextProv},
	{name: "CONTRACT never matches", args: `{"currency":{"sources":["CONTRACT"]}}`,
		callArgs: `{"currency":"CNY"}`, code: abi.ParamProvenanceRejected, message: "参数 [currency] 的来源不可信。下一步：" + nextProv},
	{name: "MODEL is always allowed", args: `{"remark":{"sources":["EVIDENCE","MODEL"]}}`,
		callArgs: `{"remark":"anything"}`, facts: []abi.Fact{fact("remark", "MODEL", "")}},
	{name: "sources are tried in order", args: `{"tagId":{"sources":["MODEL","EVIDENCE"]}}`,
		callArgs: `{"tagId":"t1"}`, facts: []abi.Fact{fact("tagId", "MODEL", "")}},
	{name: "listed without sources: the model's value is rejected", args: `{"remark":{}}`,
		callArgs: `{"remark":"x"}`, code: abi.ParamProvenanceRejected, message: "参数 [remark] 的来源不可信。下一步：" + nextProv},
	{name: "rejected with a lookup tool: the next step names it", args: `{"tagId":{"sources":["EVIDENCE"],"missing":{"action":"CALL_TOOL","tool":"list_tags"}}}`,
		callArgs: `{"tagId":"t9"}`, code: abi.ParamProvenanceRejected,
		message: "参数 [tagId] 的来源不可信。下一步：先调用 list_tags 查到 tagId 的取值，再用查到的值调用"},

	// Step 1 results: bound parameters.
	{name: "from bound: the binding's source", args: `{"spaceId":{"from":"shared.spaceId"}}`,
		callArgs: `{"spaceId":"mine"}`, bound: `{"spaceId":"S2"}`, provenance: map[string]string{"spaceId": "SHARED"}},
	{name: "const bound", args: `{"currency":{"const":"CNY"}}`,
		callArgs: `{}`, bound: `{"currency":"CNY"}`, provenance: map[string]string{"currency": "CONTRACT"}},
	{name: "from unbound: the model's value is MODEL", args: `{"spaceId":{"from":"shared.absent"}}`,
		callArgs: `{"spaceId":"S2"}`, code: abi.ParamProvenanceRejected, message: "参数 [spaceId] 的来源不可信。下一步：" + nextProv},
	{name: "from unbound with sources MODEL", args: `{"spaceId":{"from":"shared.absent","sources":["MODEL"]}}`,
		callArgs: `{"spaceId":"S5"}`},
	{name: "from unbound with sources USER asks even if the user said it", args: `{"title":{"from":"shared.absent","sources":["USER"]}}`,
		callArgs: `{"title":"Q3季度报告"}`, code: abi.ParamProvenanceAskUser,
		message: "参数 [title] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 title"},

	// Step 2: missing values.
	{name: "missing, not required", args: `{"remark":{"required":false}}`, callArgs: `{}`},
	{name: "missing: null and empty string are no value", args: `{"title":{"sources":["USER"]},"buyer":{"sources":["USER"]}}`,
		callArgs: `{"title":null,"buyer":""}`, code: abi.ParamProvenanceAskUser,
		message: "参数 [buyer、title] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 buyer、title"},
	{name: "missing: ASK_USER by default", args: `{"title":{"sources":["USER"]}}`, callArgs: `{}`, code: abi.ParamProvenanceAskUser,
		message: "参数 [title] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 title"},
	{name: "missing: CALL_TOOL", args: `{"tagId":{"sources":["EVIDENCE"],"missing":{"action":"CALL_TOOL","tool":"list_tags"}}}`,
		callArgs: `{}`, code: abi.ParamProvenanceCallTool,
		message: "参数 [tagId] 须先由工具 list_tags 查询得到。下一步：先调用 list_tags 查到 tagId 的取值，再用查到的值调用"},
	{name: "missing: CALL_TOOL without a tool passes", args: `{"tagId":{"sources":["EVIDENCE"],"missing":{"action":"CALL_TOOL"}}}`,
		callArgs: `{}`},
	{name: "missing: FAIL with its message", args: `{"invoiceNo":{"sources":["EVIDENCE"],"missing":{"action":"FAIL","message":"没有原发票号无法冲红"}}}`,
		callArgs: `{}`, code: abi.ParamProvenanceFail,
		message: "必填参数 [invoiceNo] 缺失，契约规定此时失败：没有原发票号无法冲红。下一步：" + nextFail},
	{name: "missing: FAIL without a message", args: `{"invoiceNo":{"missing":{"action":"FAIL"}}}`,
		callArgs: `{}`, code: abi.ParamProvenanceFail, message: "必填参数 [invoiceNo] 缺失，契约规定此时失败。下一步：" + nextFail},

	// Step 5: enum.
	{name: "enum: a listed value", args: `{"currency":{"sources":["MODEL"],"enum":["CNY","USD"]}}`,
		callArgs: `{"currency":"USD"}`, facts: []abi.Fact{fact("currency", "MODEL", "")}},
	{name: "enum: another value asks the user", args: `{"currency":{"sources":["MODEL"],"enum":["CNY","USD"],"label":"币种"}}`,
		callArgs: `{"currency":"GBP"}`, code: abi.ParamProvenanceAskUser,
		message: `参数 [币种] 须由用户提供：币种 的取值须为 ["CNY","USD"] 之一。下一步：调用 builtin_node_follow_up 向用户询问 币种`},

	// Priority: reject now > FAIL > CALL_TOOL > ASK_USER.
	{name: "priority: reject now first", args: `{"a":{"sources":["USER"]},"b":{"missing":{"action":"CALL_TOOL","tool":"list_b"}},` +
		`"c":{"missing":{"action":"FAIL"}},"d":{"sources":["EVIDENCE"]},"e":{"sources":["SHARED"],"label":"空间"}}`,
		callArgs: `{"d":"nope","e":"S9"}`, code: abi.ParamProvenanceRejected, message: "参数 [d、空间] 的来源不可信。下一步：" + nextProv},
	{name: "priority: FAIL before CALL_TOOL and ASK_USER", args: `{"a":{"sources":["USER"]},"b":{"missing":{"action":"CALL_TOOL","tool":"list_b"}},` +
		`"c":{"missing":{"action":"FAIL"}}}`, callArgs: `{}`, code: abi.ParamProvenanceFail,
		message: "必填参数 [c] 缺失，契约规定此时失败。下一步：" + nextFail},
	{name: "priority: CALL_TOOL before ASK_USER, one tool at a time", args: `{"a":{"sources":["USER"]},"b":{"missing":{"action":"CALL_TOOL","tool":"list_b"}},` +
		`"c":{"missing":{"action":"CALL_TOOL","tool":"list_c"}},"d":{"missing":{"action":"CALL_TOOL","tool":"list_b"}}}`, callArgs: `{}`,
		code:    abi.ParamProvenanceCallTool,
		message: "参数 [b、d] 须先由工具 list_b 查询得到。下一步：先调用 list_b 查到 b、d 的取值，再用查到的值调用"},
	{name: "priority: several ASK_USER, en", args: `{"title":{"sources":["USER"],"label":"Title"},"currency":{"sources":["MODEL"],"enum":["CNY"]},"buyer":{}}`,
		callArgs: `{"currency":"USD","buyer":""}`, locale: abi.LocaleEN, code: abi.ParamProvenanceAskUser,
		message: `parameter [buyer, currency, Title] must come from the user: currency must be one of ["CNY"]. Next: ask the user for buyer, currency, Title with builtin_node_follow_up`},

	// Array parameters.
	{name: "array: every item from evidence", args: `{"lines[].tagId":{"sources":["EVIDENCE"]}}`,
		callArgs: `{"lines":[{"tagId":"t1"},{"tagId":"t2"}]}`, facts: []abi.Fact{fact("lines[].tagId", "EVIDENCE", "ev-1")}},
	{name: "array: one made-up item", args: `{"lines[].tagId":{"sources":["EVIDENCE"],"label":"标签"}}`,
		callArgs: `{"lines":[{"tagId":"t1"},{"tagId":"t7"}]}`, code: abi.ParamProvenanceRejected, message: "参数 [标签] 的来源不可信。下一步：" + nextProv},
	{name: "array: an item without a value", args: `{"lines[].tagId":{"sources":["EVIDENCE"],"missing":{"action":"CALL_TOOL","tool":"list_tags"}}}`,
		callArgs: `{"lines":[{"tagId":"t1"},{"qty":2}]}`, code: abi.ParamProvenanceCallTool,
		message: "参数 [lines[].tagId] 须先由工具 list_tags 查询得到。下一步：先调用 list_tags 查到 lines[].tagId 的取值，再用查到的值调用"},
	{name: "array: template items bound by ArgBinding", args: `{"lines[].goodsCode":{"from":"shared.cart[].code"}}`,
		callArgs: `{"lines":[{}]}`, bound: `{"lines":[{"goodsCode":"G1"}]}`, provenance: map[string]string{"lines.0.goodsCode": "SHARED"}},

	{name: "the bound arguments are checked, not the model's", args: `{"spaceId":{"sources":["SHARED"]}}`,
		callArgs: `{"spaceId":"S9"}`, bound: `{"spaceId":"S2"}`, facts: []abi.Fact{fact("spaceId", "SHARED", "")}},
	{name: "no contract", callArgs: `{"a":1}`},
	{name: "a contract without args", args: "-", callArgs: `{"a":1}`},
}

func request(tc tcase) []byte {
	r := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_invoice", CallID: "c1",
		Args: json.RawMessage(tc.callArgs), Provenance: tc.provenance, Locale: tc.locale,
		State: map[string]json.RawMessage{
			string(abi.CapStateNode): json.RawMessage(node), string(abi.CapStateEntities): json.RawMessage(entities),
			string(abi.CapStateEvidence): json.RawMessage(evidence), string(abi.CapStateConversation): json.RawMessage(conversation),
			string(abi.CapStateFollowUp): json.RawMessage(followup),
		}}
	switch tc.args {
	case "":
	case "-":
		r.Contract = json.RawMessage(`{"sideEffect":"NONE"}`)
	default:
		r.Contract = json.RawMessage(`{"args":` + tc.args + `}`)
	}
	if tc.bound != "" {
		r.Bound = json.RawMessage(tc.bound)
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

// TestParamContract runs every case natively and as wasm, requires
// byte-identical verdicts, and checks outcome, code and exact message, or
// the provenance facts of a pass.
func TestParamContract(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := request(tc)
			nv := pair.Both(t, req)
			nj, _ := json.Marshal(nv)
			if tc.code == "" {
				if !nv.Pass || nv.Args != nil {
					t.Fatalf("want a pass, got %s", nj)
				}
				if !reflect.DeepEqual(nv.Facts, tc.facts) {
					t.Fatalf("facts\n got %+v\nwant %+v", nv.Facts, tc.facts)
				}
				return
			}
			if nv.Pass || nv.Observation == nil {
				t.Fatalf("want %s, got %s", tc.code, nj)
			}
			o := *nv.Observation
			o.Locale = tc.locale
			if o.Outcome != abi.OutcomeRejected || o.Code != tc.code {
				t.Fatalf("got %v %s, want REJECTED %s", o.Outcome, o.Code, tc.code)
			}
			if got := o.Message(); got != tc.message {
				t.Fatalf("message\n got %q\nwant %q", got, tc.message)
			}
		})
	}
}
