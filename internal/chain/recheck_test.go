package chain

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// TestRewrittenArgsAreChecked: the arguments the tool finally receives are
// validated against its input schema, after every before guard, so a guard
// whose rewrite breaks them cannot send them.
func TestRewrittenArgsAreChecked(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"spaceId":{"type":"integer"}},"required":["title","spaceId"]}`)
	rewrite := func(args string) Guard {
		return Native("Rewrite", plugin("Rewrite", nil, both, func(c *guest.Call) { c.Pass([]byte(args)) }), nil)
	}
	tests := []struct {
		name    string
		locale  abi.Locale
		schema  json.RawMessage
		args    string
		before  []Guard
		invoked bool
		sent    string
		code    abi.Code
		message string
	}{
		{"a valid rewrite is sent", "", schema, `{"title":"Q3"}`, []Guard{binder}, true, `{"title":"Q3","spaceId":7}`, "", "工具 t 调用成功"},
		{"a rewrite of the wrong type is refused", "", schema, `{"title":"Q3","spaceId":7}`, []Guard{binder, rewrite(`{"title":"Q3","spaceId":"seven"}`)}, false, "",
			abi.ArgRejected, "参数不符合工具 t 的定义：经 Rewrite 改写后，spaceId: expected integer, got string。下一步：换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail"},
		{"a rewrite that drops a required field is refused (en)", abi.LocaleEN, schema, `{"title":"Q3","spaceId":7}`, []Guard{rewrite(`{"spaceId":7}`)}, false, "",
			abi.ArgRejected, "arguments do not match tool t: as rewritten by Rewrite, title: required property is missing. Next: change strategy: other arguments, another tool, or finish or fail with what you have"},
		{"the model's own invalid arguments are refused when no guard checked them", abi.LocaleEN, schema, `{"title":1,"spaceId":7}`, nil, false, "",
			abi.ArgRejected, "arguments do not match tool t: title: expected string, got number. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
		{"a tool without a schema is not checked", "", nil, `{"title":"Q3"}`, []Guard{rewrite(`{"spaceId":"seven"}`)}, true, `{"spaceId":"seven"}`, "", "工具 t 调用成功"},
		{"a schema that does not compile refuses the call", abi.LocaleEN, json.RawMessage(`{"$ref":"https://example.com/s.json"}`), `{}`, nil, false, "",
			abi.ArgRejected, "arguments do not match tool t: jsonschema: remote reference refused: \"https://example.com/s.json\" is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched. Next: call builtin_node_fail and state the reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := &script{steps: []step{ok(`{}`)}}
			c := &Chain{Before: tt.before, Invoker: &Invoker{Caller: sc}}
			res := c.Run(context.Background(), Call{Tenant: "a", CallID: "c1", Tool: "t", Args: []byte(tt.args), Schema: tt.schema, Locale: tt.locale})
			o := res.Observation
			want := abi.OutcomeSuccess
			if tt.code != "" {
				want = abi.OutcomeRejected
			}
			if o.Outcome != want || o.Code != tt.code || o.Message() != tt.message {
				t.Fatalf("got %v %s %q\nwant %v %s %q", o.Outcome, o.Code, o.Message(), want, tt.code, tt.message)
			}
			if res.Err != nil {
				t.Fatalf("Err = %v, want an observation only", res.Err)
			}
			if res.Invoked != tt.invoked || len(sc.got) != map[bool]int{true: 1}[tt.invoked] || (tt.invoked && string(sc.got[0]) != tt.sent) {
				t.Fatalf("invoked %v, sent %s; want %v %s", res.Invoked, sc.got, tt.invoked, tt.sent)
			}
		})
	}
}
