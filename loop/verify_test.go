package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/loop/chain"
	"github.com/agentwarden/warden/loop/state"
	"github.com/agentwarden/warden/model/scripted"
)

// verifiedContract is skillContract with a verify on create_site: the
// site query by the write's title.
var verifiedContract = strings.Replace(skillContract, `"extracts": [{"key": "site", "path": "data", "entity": {"type": "site"}}],`,
	`"extracts": [{"key": "site", "path": "data", "entity": {"type": "site"}}],
      "verify": {"tool": "query_site", "args": {"title": {"from": "call.title"}, "exact": {"const": true}}},`, 1)

const notFound = `{"code":404,"msg":"没有该网站"}`

// A confirmed write that times out is UNKNOWN; the node settles it before
// the model goes on (§14.3): verified by the contract's verify tool, or
// asked of the user.
func TestVerifyAfterWriteTimeout(t *testing.T) {
	t.Parallel()
	finish := turn(call("builtin_node_finish", `{"output":"网站 Spring Launch 已创建"}`))
	tests := []struct {
		name     string
		contract string
		verify   []answer
		turns    []scripted.Turn
		answer   *bool // the user's answer to VERIFY, when asked
		ledger   abi.LedgerState
		status   state.Status
		tools    []string
		message  string // what the model read after the verdict
	}{
		{name: "verified: took effect", contract: verifiedContract, verify: []answer{{body: sites}},
			turns:  []scripted.Turn{{Expect: &scripted.Expect{Tool: "query_site", Contains: "已核实"}, ToolCalls: finish.ToolCalls}},
			ledger: abi.LedgerSuccess, status: state.Done,
			tools:   []string{"create_site FAILED TOOL_TIMEOUT stalls=1", "query_site SUCCESS stalls=1", "builtin_node_finish SUCCESS stalls=1"},
			message: "已核实：写操作 create_site 已生效（回查 query_site 判定成功），不要再次调用。\n结果：有数据（success_with_data）\n" + `{"code":200,"data":{"sites":[{"id":"site_1","name":"官网"}]}}`},
		{name: "verified: did not take effect", contract: verifiedContract, verify: []answer{{body: notFound}},
			turns:  []scripted.Turn{turn(call("builtin_node_fail", `{"reason":"网站未创建"}`))},
			ledger: abi.LedgerFailed, status: state.Failed,
			tools:   []string{"create_site FAILED TOOL_TIMEOUT stalls=1", "query_site FAILED TOOL_BUSINESS_FAILED stalls=1", "builtin_node_fail SUCCESS stalls=1"},
			message: "已核实：写操作 create_site 未生效（回查 query_site 判定失败）：{\"code\":404,\"msg\":\"没有该网站\"}。下一步：" + abi.NextBusiness.Text(abi.LocaleZH)},
		{name: "no verify: the user says yes", answer: new(bool), turns: []scripted.Turn{finish},
			ledger: abi.LedgerSuccess, status: state.Done,
			tools:   []string{"create_site FAILED TOOL_TIMEOUT stalls=1", "builtin_node_finish SUCCESS stalls=1"},
			message: "用户确认写操作 create_site 已生效，不要再次调用。"},
		{name: "no verify: the user says no", answer: new(bool), turns: []scripted.Turn{turn(call("builtin_node_fail", `{"reason":"网站未创建"}`))},
			ledger: abi.LedgerFailed, status: state.Failed,
			tools:   []string{"create_site FAILED TOOL_TIMEOUT stalls=1", "builtin_node_fail SUCCESS stalls=1"},
			message: "用户确认写操作 create_site 未生效。如仍需执行，可重新调用。"},
		{name: "the verify call fails: the user is asked", contract: verifiedContract, verify: []answer{{err: chain.ErrUnreachable}}, answer: new(bool),
			turns: []scripted.Turn{finish}, ledger: abi.LedgerSuccess, status: state.Done,
			tools:   []string{"create_site FAILED TOOL_TIMEOUT stalls=1", "query_site FAILED TOOL_UNREACHABLE stalls=1", "builtin_node_finish SUCCESS stalls=1"},
			message: "用户确认写操作 create_site 已生效，不要再次调用。"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.answer != nil {
				*tt.answer = tt.status == state.Done
			}
			turns := append(append([]scripted.Turn(nil), gatedTurns...), tt.turns...)
			h := newHarness(t, setup{contract: tt.contract, turns: turns, answers: map[string][]answer{
				"query_space": {{body: spaces}}, "create_site": {{err: chain.ErrTimeout}}, "query_site": tt.verify}})
			_, err := h.runner.Run(ctx, "n1")
			must(t, err)
			exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
			must(t, err)
			if tt.answer != nil {
				if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendVerify || exit.Suspension.Tool != "create_site" ||
					exit.Suspension.Question != `写操作 create_site 的结果不确定（调用超时或中断），请确认它是否已生效？参数：{"title":"Spring Launch","spaceId":42}` {
					t.Fatalf("exit %+v", exit)
				}
				if s := lastEvent(h, loop.KindSuspend); s.Status != "VERIFY" || s.Tool != "create_site" {
					t.Fatalf("suspend %+v", s)
				}
				// Until settled the node stays suspended: no other resume fits.
				if _, err := h.runner.AnswerFollowUp(ctx, "n1", "x"); !errors.Is(err, loop.ErrNotSuspended) {
					t.Fatalf("follow-up answer to VERIFY: %v", err)
				}
				exit, err = h.runner.AnswerVerify(ctx, "n1", *tt.answer)
				must(t, err)
				want := map[bool]string{true: "YES", false: "NO"}[*tt.answer]
				if r := lastEvent(h, loop.KindResume); r.Status != "VERIFY" || r.Message != want {
					t.Fatalf("resume %+v", r)
				}
			}
			if exit.Status != tt.status {
				t.Fatalf("exit %+v", exit)
			}
			h.wantTools(append([]string{"query_space SUCCESS stalls=0", "create_site DEFERRED APPROVAL_REQUIRED stalls=0", "builtin_node_approval SUCCESS stalls=0"}, tt.tools...)...)
			l, _ := h.store.Ledger("t1")
			if len(l) != 1 || l[0].State != tt.ledger {
				t.Fatalf("ledger %+v", l)
			}
			msgs := h.model.reqs[len(h.model.reqs)-1].Messages
			if got := msgs[len(msgs)-1].Content; got != tt.message {
				t.Fatalf("model read %q, want %q", got, tt.message)
			}
			// The write was sent once; a verify call carries verify.args.
			calls := h.tools.called()
			if n := strings.Count(strings.Join(calls, "\n"), "create_site "); n != 1 {
				t.Fatalf("write sent %d times: %v", n, calls)
			}
			if tt.verify != nil && calls[len(calls)-1] != `query_site {"exact":true,"title":"Spring Launch"}` {
				t.Fatalf("verify call %v", calls)
			}
			if tt.ledger == abi.LedgerSuccess {
				ev, _ := h.store.Evidence("n1")
				if it := ev[len(ev)-1]; it.Tool != "create_site" || it.Status != abi.OutcomeSuccess || !it.BusinessOK {
					t.Fatalf("write evidence %+v", it)
				}
			}
			h.done()
		})
	}
}

// A write pre-registered by a process that died is found STARTED when the
// store is opened again: Recover makes it UNKNOWN_PRE_CALL, the node asks
// the user, and the write is never issued again meanwhile.
func TestVerifyAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("builtin_node_finish", `{"output":"网站已创建"}`)),
	}})
	args := []byte(`{"spaceId":42,"title":"Spring Launch"}`)
	c, _, err := contract.Parse("site.builder", []byte(skillContract))
	must(t, err)
	key := c.Tool("create_site").KeyFor(args)
	must(t, h.store.RecordCall("t1", "call_9_1", args))
	must(t, h.store.Apply("n1", []abi.Effect{{Kind: abi.EffectLedgerReserve,
		Payload: []byte(`{"tool":"create_site","key":"` + key + `","argsDigest":"` + state.ArgsDigest(args) + `","callId":"call_9_1","approved":true}`)}}))
	must(t, h.store.SetTarget("n1", "create_site", false))
	marked, err := h.runner.Recover()
	must(t, err)
	if len(marked) != 1 || marked[0].State != abi.LedgerUnknownPreCall {
		t.Fatalf("marked %+v", marked)
	}
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendVerify || string(exit.Suspension.Args) != string(args) {
		t.Fatalf("exit %+v", exit)
	}
	// Running it again changes nothing: it waits for the user.
	if again, err := h.runner.Run(ctx, "n1"); err != nil || again.Status != state.Suspended {
		t.Fatalf("run again: %+v %v", again, err)
	}
	exit, err = h.runner.AnswerVerify(ctx, "n1", true)
	must(t, err)
	if exit.Status != state.Done {
		t.Fatalf("exit %+v", exit)
	}
	msgs := h.model.reqs[0].Messages
	if got := msgs[len(msgs)-1].Content; got != "用户确认写操作 create_site 已生效，不要再次调用。" {
		t.Fatalf("model read %q", got)
	}
	if calls := h.tools.called(); len(calls) != 0 {
		t.Fatalf("tool calls %v", calls)
	}
	if _, err := h.runner.AnswerVerify(ctx, "n1", true); !errors.Is(err, loop.ErrNotSuspended) {
		t.Fatalf("answer again: %v", err)
	}
	h.done()
}

// A verdict settles an UNKNOWN write once; a settled write takes none.
func TestSettleUncertain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{})
	args := []byte(`{"spaceId":42,"title":"Spring Launch"}`)
	c, _, err := contract.Parse("site.builder", []byte(skillContract))
	must(t, err)
	key := c.Tool("create_site").KeyFor(args)
	must(t, h.store.Apply("n1", []abi.Effect{
		{Kind: abi.EffectLedgerReserve, Payload: []byte(`{"tool":"create_site","key":"` + key + `","argsDigest":"d","callId":"c1"}`)},
		{Kind: abi.EffectLedgerSettle, Payload: []byte(`{"tool":"create_site","key":"` + key + `","state":"UNKNOWN"}`)}}))
	must(t, h.store.SettleUncertain("t1", "create_site", key, false, nil))
	if err := h.store.SettleUncertain("t1", "create_site", key, true, nil); !errors.Is(err, state.ErrNotUncertain) {
		t.Fatalf("settle a settled write: %v", err)
	}
}

func lastEvent(h *harness, k loop.Kind) loop.Event {
	h.t.Helper()
	var out loop.Event
	for _, e := range h.trace.Events() {
		if e.Kind == k {
			out = e
		}
	}
	return out
}
