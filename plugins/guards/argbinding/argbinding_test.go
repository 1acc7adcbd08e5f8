//go:build !wasip1

package argbinding_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/argbinding"
)

var pair = testdata.NewPair(argbinding.Plugin, "./plugins/guards/argbinding/cmd", time.Time{})

// The state views every case sees (only the views the manifest asks for).
const (
	node = `{"sessionId":"s1","taskId":"t1","nodeId":"n2",` +
		`"inputs":{"orderNo":"SO-1","customer":{"id":"C1"}},` +
		`"outputs":{"draftId":{"value":"D-9","sourceType":"EVIDENCE","sourceRef":"ev-n2-1"}},` +
		`"shared":{"spaceId":"S2","cart":[{"code":"G1"},{"code":"G2"},{"code":"G3"}],"one":[{"id":"X"}],"two":[{"id":"A"},{"id":"B"}]},` +
		`"session":{"lang":"zh"},"platform":{"userId":1001,"organId":7}}`
	entities = `{"entities":[{"type":"customer","id":"C2","name":"Beta","attrs":{"taxNo":"TX2"}},` +
		`{"type":"customer","id":"C1","name":"Acme","attrs":{"taxNo":"TX1"}}]}`
	// This node's evidence first, then upstream; the failed and the
	// business-failed items are never read.
	evidence = `{"items":[` +
		`{"id":"ev-n2-fail","tool":"list_tags","nodeId":"n2","status":"FAILED","businessOk":false,"result":"failure","empty":false,"extracts":{"tag_list":[{"id":"bad"}]}},` +
		`{"id":"ev-n2-biz","tool":"list_tags","nodeId":"n2","status":"SUCCESS","businessOk":false,"result":"success_with_data","empty":false,"extracts":{"tag_list":[{"id":"biz"}]}},` +
		`{"id":"ev-n2-1","tool":"list_tags","nodeId":"n2","status":"SUCCESS","businessOk":true,"result":"success_with_data","empty":false,"extracts":{"tag_list":[{"id":"t1"},{"id":"t2"}],"space":[{"spaceId":"S7"}]}},` +
		`{"id":"ev-n1-1","tool":"list_tags","nodeId":"n1","status":"SUCCESS","businessOk":true,"result":"success_with_data","empty":false,"extracts":{"tag_list":[{"id":"up"}],"spaces":[{"spaceId":"S1"},{"spaceId":"S3"}],"owner":{"id":"U5"}}}]}`
)

type tcase struct {
	name     string
	contract string // "" = the tool has no contract
	args     string
	bound    string // "" = no earlier rewrite
	want     string // rewritten arguments; "" = passed unchanged
	facts    []abi.Fact
}

func fact(path, source, detail string) abi.Fact {
	return abi.Fact{Path: path, Source: source, Detail: detail}
}

var cases = []tcase{
	{name: "const overwrites the model", contract: `{"args":{"currency":{"const":"CNY"}}}`,
		args: `{"currency":"USD","amount":5}`, want: `{"currency":"CNY","amount":5}`, facts: []abi.Fact{fact("currency", "CONTRACT", "const")}},
	{name: "inputs", contract: `{"args":{"orderNo":{"from":"inputs.orderNo"}}}`,
		args: `{}`, want: `{"orderNo":"SO-1"}`, facts: []abi.Fact{fact("orderNo", "NODE_OUTPUT", "inputs.orderNo")}},
	{name: "outputs", contract: `{"args":{"draftId":{"from":"outputs.draftId"}}}`,
		args: `{"draftId":"mine"}`, want: `{"draftId":"D-9"}`, facts: []abi.Fact{fact("draftId", "NODE_OUTPUT", "outputs.draftId")}},
	{name: "shared", contract: `{"args":{"spaceId":{"from":"shared.spaceId"}}}`,
		args: `{"spaceId":"mine"}`, want: `{"spaceId":"S2"}`, facts: []abi.Fact{fact("spaceId", "SHARED", "shared.spaceId")}},
	{name: "session", contract: `{"args":{"locale":{"from":"session.lang"}}}`,
		args: `{}`, want: `{"locale":"zh"}`, facts: []abi.Fact{fact("locale", "SESSION", "session.lang")}},
	{name: "prior: the most recent entity of the type", contract: `{"args":{"customerId":{"from":"prior.customer.id"}}}`,
		args: `{}`, want: `{"customerId":"C2"}`, facts: []abi.Fact{fact("customerId", "PRIOR_TASK", "prior.customer.id@customer:C2")}},
	{name: "prior: an exact entity's attribute, nested parameter", contract: `{"args":{"orderInfo.taxNo":{"from":"prior.customer:C1.taxNo"}}}`,
		args: `{"orderInfo":{"amount":3}}`, want: `{"orderInfo":{"amount":3,"taxNo":"TX1"}}`,
		facts: []abi.Fact{fact("orderInfo.taxNo", "PRIOR_TASK", "prior.customer:C1.taxNo@customer:C1")}},
	{name: "platform", contract: `{"args":{"userId":{"from":"platform.userId"}}}`,
		args: `{"userId":1}`, want: `{"userId":1001}`, facts: []abi.Fact{fact("userId", "PLATFORM", "platform.userId")}},
	{name: "evidence key lookup: this node's successful evidence first", contract: `{"args":{"tagId":{"from":"evidence.tag_list.0.id"}}}`,
		args: `{}`, want: `{"tagId":"t1"}`, facts: []abi.Fact{fact("tagId", "EVIDENCE", "evidence.tag_list.0.id@ev-n2-1")}},
	{name: "evidence key lookup falls back to upstream", contract: `{"args":{"ownerId":{"from":"evidence.owner.id"}}}`,
		args: `{}`, want: `{"ownerId":"U5"}`, facts: []abi.Fact{fact("ownerId", "EVIDENCE", "evidence.owner.id@ev-n1-1")}},
	{name: "from without a value keeps the model's", contract: `{"args":{"spaceId":{"from":"shared.absent"}}}`,
		args: `{"spaceId":"mine"}`},
	{name: "UNIQUE evidence with one candidate binds the array", contract: `{"args":{"space":{"from":"evidence.space","when":"UNIQUE"}}}`,
		args: `{}`, want: `{"space":[{"spaceId":"S7"}]}`, facts: []abi.Fact{fact("space", "EVIDENCE", "evidence.space@ev-n2-1")}},
	{name: "UNIQUE evidence with two candidates binds nothing", contract: `{"args":{"space":{"from":"evidence.spaces","when":"UNIQUE"}}}`,
		args: `{}`},
	{name: "UNIQUE path with one candidate", contract: `{"args":{"id":{"from":"shared.one[].id","when":"UNIQUE"}}}`,
		args: `{}`, want: `{"id":"X"}`, facts: []abi.Fact{fact("id", "SHARED", "shared.one[].id")}},
	{name: "UNIQUE path with two candidates binds nothing", contract: `{"args":{"id":{"from":"shared.two[].id","when":"UNIQUE"}}}`,
		args: `{"id":"A"}`},
	{name: "array template fills only the indexes the model left empty", contract: `{"args":{"lines[].goodsCode":{"from":"shared.cart[].code"}}}`,
		args:  `{"lines":[{"goodsCode":"MINE","qty":1},{"qty":2},{"goodsCode":""}]}`,
		want:  `{"lines":[{"goodsCode":"MINE","qty":1},{"qty":2,"goodsCode":"G2"},{"goodsCode":"G3"}]}`,
		facts: []abi.Fact{fact("lines.1.goodsCode", "SHARED", "shared.cart[].code"), fact("lines.2.goodsCode", "SHARED", "shared.cart[].code")}},
	{name: "several parameters in path order", contract: `{"args":{"spaceId":{"from":"shared.spaceId"},"currency":{"const":"CNY"},"title":{"sources":["USER"]}}}`,
		args: `{"title":"Q3"}`, want: `{"title":"Q3","currency":"CNY","spaceId":"S2"}`,
		facts: []abi.Fact{fact("currency", "CONTRACT", "const"), fact("spaceId", "SHARED", "shared.spaceId")}},
	{name: "binds on the arguments rewritten so far", contract: `{"args":{"spaceId":{"from":"shared.spaceId"}}}`,
		args: `{"title":"model"}`, bound: `{"title":"rewritten"}`, want: `{"title":"rewritten","spaceId":"S2"}`,
		facts: []abi.Fact{fact("spaceId", "SHARED", "shared.spaceId")}},
	{name: "no contract", args: `{"a":1}`},
	{name: "contract without args", contract: `{"sideEffect":"NONE"}`, args: `{"a":1}`},
	{name: "arguments that are not an object are left to ArgPolicy", contract: `{"args":{"currency":{"const":"CNY"}}}`, args: `[1]`},
}

func request(tc tcase) []byte {
	r := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_order", CallID: "c1",
		Args: json.RawMessage(tc.args),
		State: map[string]json.RawMessage{
			string(abi.CapStateNode): json.RawMessage(node), string(abi.CapStateEntities): json.RawMessage(entities),
			string(abi.CapStateEvidence): json.RawMessage(evidence),
		}}
	if tc.contract != "" {
		r.Contract = json.RawMessage(tc.contract)
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

// TestArgBinding runs every case natively and as wasm, requires
// byte-identical verdicts, and checks the rewritten arguments and facts.
func TestArgBinding(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := request(tc)
			nv := pair.Both(t, req)
			nj, _ := json.Marshal(nv)
			if !nv.Pass || nv.Observation != nil || len(nv.Effects) != 0 {
				t.Fatalf("ArgBinding never rejects, got %s", nj)
			}
			if string(nv.Args) != tc.want {
				t.Errorf("args\n got %s\nwant %s", nv.Args, tc.want)
			}
			if !reflect.DeepEqual(nv.Facts, tc.facts) {
				t.Errorf("facts\n got %+v\nwant %+v", nv.Facts, tc.facts)
			}
		})
	}
}
