package chain

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func plugin(name string, caps []abi.Capability, phases []abi.Phase, h func(c *guest.Call)) guest.Plugin {
	return guest.Plugin{Manifest: abi.Manifest{Name: strings.ToLower(name), Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Phases: phases, Capabilities: caps}, Handle: h}
}

var both = []abi.Phase{abi.PhaseBefore, abi.PhaseAfter}

// Stub guards with the behaviours the chain must route.
var (
	binder = Native("Bind", plugin("Bind", nil, both, func(c *guest.Call) {
		if c.Has("bound.spaceId") {
			c.Pass(nil)
			return
		}
		c.Pass([]byte(`{"title":"`+c.Get("args.title").String()+`","spaceId":7}`), abi.Fact{Path: "spaceId", Source: "SHARED"})
	}), nil)
	rejecter = Native("Reject", plugin("Reject", nil, both, func(c *guest.Call) {
		if c.Get("bound.title").String() == "" {
			c.Rejected(abi.ParamProvenanceAskUser, "参数 [title] 须由用户提供", abi.NextFollowUp.Text("", "param", "title"))
			return
		}
		c.Pass(nil)
	}), nil)
	reserver = Native("Reserve", plugin("Reserve", []abi.Capability{abi.CapEffectLedger, abi.CapStateLedger}, both, func(c *guest.Call) {
		if c.Phase() == abi.PhaseAfter {
			c.Effect(abi.EffectLedgerSettle, []byte(`{"tool":"t","key":"k","state":"`+c.Get("result.outcome").String()+`"}`))
			c.Pass(nil)
			return
		}
		if c.Get(guest.StatePath(abi.CapStateLedger, "entries.#(state==\"SUCCESS\")")).Exists() {
			c.Success("复用已有成功写结果", nil)
			return
		}
		c.Effect(abi.EffectLedgerReserve, []byte(`{"tool":"t","key":"k","argsDigest":"d"}`))
		c.Pass(nil)
	}), nil)
	judge = Native("Judge", plugin("Judge", nil, both, func(c *guest.Call) {
		if c.Get("result.outcome").String() == "SUCCESS" && !c.Get("response.ok").Bool() {
			c.Failed(abi.ToolBusinessFailed, "业务失败 [system.50001]："+c.Get("response.msg").String(), abi.NextBusiness.Text(c.Locale()), nil)
			return
		}
		c.Pass(nil)
	}), nil)
	peeker = Native("Peek", plugin("Peek", nil, both, func(c *guest.Call) {
		// a guard without the ledger grant must not see the ledger view
		if c.Has(guest.StatePath(abi.CapStateLedger, "")) {
			c.Rejected(abi.GuardUnavailable, "看到了未授权的状态", abi.NextRetryLater.Text(""))
			return
		}
		c.Pass(nil)
	}), nil)
)

func TestChain(t *testing.T) {
	t.Parallel()
	successLedger := json.RawMessage(`{"entries":[{"tool":"t","key":"k","state":"SUCCESS"}]}`)
	tests := []struct {
		name     string
		args     string
		ledger   json.RawMessage
		steps    []step
		invoked  bool
		sent     string
		outcome  abi.Outcome
		code     abi.Code
		message  string
		effects  []string
		verdicts string
	}{
		{"all pass", `{"title":"Q3"}`, nil, []step{ok(`{"ok":true,"id":9}`)}, true, `{"title":"Q3","spaceId":7}`,
			abi.OutcomeSuccess, "", "工具 t 调用成功", []string{"ledger.reserve", "ledger.settle"},
			"Peek pass, Bind rewrite, Reject pass, Reserve pass, Judge pass, Reserve pass"},
		{"a before guard rejects: nothing runs after it", `{"title":""}`, nil, nil, false, "",
			abi.OutcomeRejected, abi.ParamProvenanceAskUser, "参数 [title] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 title", nil,
			"Peek pass, Bind rewrite, Reject REJECTED PARAM_PROVENANCE_ASK_USER"},
		{"a reused write skips the call", `{"title":"Q3"}`, successLedger, nil, false, "",
			abi.OutcomeSuccess, "", "复用已有成功写结果", nil,
			"Peek pass, Bind rewrite, Reject pass, Reserve SUCCESS "},
		{"an after guard turns a business failure into FAILED", `{"title":"Q3"}`, nil, []step{ok(`{"ok":false,"msg":"空间已满"}`)}, true, `{"title":"Q3","spaceId":7}`,
			abi.OutcomeFailed, abi.ToolBusinessFailed, "业务失败 [system.50001]：空间已满。下一步：根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail",
			[]string{"ledger.reserve", "ledger.settle"}, "Peek pass, Bind rewrite, Reject pass, Reserve pass, Judge FAILED TOOL_BUSINESS_FAILED, Reserve pass"},
		{"arguments that are not JSON never reach the tool", `{"title":`, nil, nil, false, "",
			abi.OutcomeRejected, abi.ArgJSONInvalid, "参数不是合法 JSON：第 1 行第 10 列：unexpected end of JSON input；该处参数原文：{\"title\":。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户", nil,
			"Peek pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := &script{steps: append(tt.steps, ok(`{}`))}
			before, after := []Guard{peeker, binder, rejecter, reserver}, []Guard{judge, reserver}
			if tt.args == `{"title":` {
				before = []Guard{peeker}
			}
			c := &Chain{Before: before, After: after, Invoker: &Invoker{Caller: sc}}
			state := map[string]json.RawMessage{}
			if tt.ledger != nil {
				state[string(abi.CapStateLedger)] = tt.ledger
			} else {
				state[string(abi.CapStateLedger)] = json.RawMessage(`{"entries":[]}`)
			}
			res := c.Run(context.Background(), Call{Tenant: "a", CallID: "c1", Tool: "t", Args: []byte(tt.args), State: state})
			o := res.Observation
			if o.Outcome != tt.outcome || o.Code != tt.code || o.Message() != tt.message {
				t.Fatalf("got %v %s %q\nwant %v %s %q", o.Outcome, o.Code, o.Message(), tt.outcome, tt.code, tt.message)
			}
			if res.Invoked != tt.invoked || (tt.invoked && string(sc.got[0]) != tt.sent) {
				t.Fatalf("invoked %v, sent %s; want %v %s", res.Invoked, sc.got, tt.invoked, tt.sent)
			}
			var kinds []string
			for _, e := range res.Effects {
				kinds = append(kinds, e.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.effects, ",") {
				t.Fatalf("effects %v, want %v", kinds, tt.effects)
			}
			var steps []string
			for _, s := range res.Trace {
				steps = append(steps, s.Guard+" "+s.Verdict)
			}
			if got := strings.Join(steps, ", "); got != tt.verdicts {
				t.Fatalf("trace %q\nwant  %q", got, tt.verdicts)
			}
			if tt.invoked && res.Provenance["spaceId"] != "SHARED" {
				t.Fatalf("provenance %v", res.Provenance)
			}
		})
	}
}

func TestCatalogDenied(t *testing.T) {
	t.Parallel()
	sc := &script{steps: []step{ok(`{}`)}}
	c := &Chain{Before: []Guard{binder}, Invoker: &Invoker{Caller: sc}, Visible: func(tool string) bool { return tool == "t" }}
	res := c.Run(context.Background(), Call{Tool: "delete_all", Args: []byte(`{}`)})
	want := "工具 delete_all 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"
	if res.Invoked || len(res.Trace) != 0 || res.Observation.Code != abi.CatalogDenied || res.Observation.Outcome != abi.OutcomeRejected || res.Observation.Message() != want {
		t.Fatalf("got %+v %q", res, res.Observation.Message())
	}
}

type named string

func (n named) Name() string { return string(n) }
func (n named) Guard(context.Context, string, *abi.Request) abi.Verdict {
	return abi.Verdict{Pass: true}
}

func TestInsert(t *testing.T) {
	t.Parallel()
	fp := []Guard{named("ArgPolicy"), named("ArgBinding"), named("ParamContract"), named("Fingerprint"), named("WriteGate")}
	a, b, c, d := named("a"), named("b"), named("c"), named("d")
	got, err := Insert(fp, abi.PhaseBefore, []Placement{
		{a, abi.PhaseBefore, "after:ArgBinding"}, {b, abi.PhaseBefore, "first"}, {c, abi.PhaseBefore, ""},
		{d, abi.PhaseBefore, "before:WriteGate"}, {named("x"), abi.PhaseAfter, "first"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, g.Name())
	}
	if want := "b ArgPolicy ArgBinding a ParamContract Fingerprint d WriteGate c"; strings.Join(names, " ") != want {
		t.Fatalf("got %v, want %s", names, want)
	}
	if _, err := Insert(fp, abi.PhaseBefore, []Placement{{a, abi.PhaseBefore, "after:Evidence"}}); !errors.Is(err, ErrPosition) {
		t.Fatalf("unknown anchor: %v", err)
	}
}

// Empty arguments are the empty object for a tool whose schema requires
// nothing (and for a tool without a schema); for one that requires
// properties they stay empty and, when no guard refuses them, the chain
// says they are empty. Other text is never rewritten.
func TestEmptyArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, schema string
		sent               string
		code               abi.Code
		message            string
	}{
		{"empty, no schema", ``, ``, `{}`, "", ""},
		{"whitespace, nothing required", " \n", `{"type":"object","properties":{}}`, `{}`, "", ""},
		{"empty, required properties", ``, `{"type":"object","required":["q"]}`, "", abi.ArgJSONInvalid,
			"arguments are not valid JSON: the arguments are empty; a JSON object is expected ({} when there is nothing to pass). Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
		{"other text stays as it is", `{"q":`, `{"type":"object","properties":{}}`, "", abi.ArgJSONInvalid,
			"arguments are not valid JSON: line 1, column 6: unexpected end of JSON input; the arguments there read: {\"q\":. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := &script{steps: []step{ok(`{}`)}}
			c := &Chain{Before: []Guard{peeker}, Invoker: &Invoker{Caller: sc}}
			res := c.Run(context.Background(), Call{Tenant: "a", CallID: "c1", Tool: "t", Args: []byte(tt.args),
				Schema: json.RawMessage(tt.schema), Locale: abi.LocaleEN})
			o := res.Observation
			if tt.code == "" {
				if o.Outcome != abi.OutcomeSuccess || !res.Invoked || string(sc.got[0]) != tt.sent {
					t.Fatalf("got %v %s %q, sent %s; want the tool called with %s", o.Outcome, o.Code, o.Message(), sc.got, tt.sent)
				}
				return
			}
			if res.Invoked || o.Code != tt.code || o.Message() != tt.message {
				t.Fatalf("got invoked=%v %s %q\nwant %s %q", res.Invoked, o.Code, o.Message(), tt.code, tt.message)
			}
		})
	}
}
