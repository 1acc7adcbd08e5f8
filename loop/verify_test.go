package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
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
			message: "已核实：写操作 create_site 未生效（回查 query_site 判定失败）：业务失败：{\"code\":404,\"msg\":\"没有该网站\"}。下一步：" + abi.NextBusiness.Text(abi.LocaleZH)},
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

// siteJudge is a ResponseContract of another generation: it judges
// query_site by its own rule (found when data.sites is empty, a business
// failure otherwise; or a trap, like a plugin that failed) and every other
// tool as the first-party guard does.
type siteJudge struct {
	first chain.Guard
	rule  string // "inverted" or "trap"
}

func (j siteJudge) Name() string { return "ResponseContract" }

func (j siteJudge) Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	if req.Tool != "query_site" || req.Result == nil || req.Result.Outcome != abi.OutcomeSuccess {
		return j.first.Guard(ctx, tenant, req)
	}
	if j.rule == "trap" {
		o := abi.Rejected(abi.GuardUnavailable, abi.GuardUnavailable.Reason(req.Locale, "plugin", "ResponseContract", "detail", "trap"), abi.NextRetryLater.Text(req.Locale))
		return abi.Verdict{Observation: &o}
	}
	if !strings.Contains(string(req.Response), `"sites":[]`) {
		o := abi.Failed(abi.ToolBusinessFailed, "业务失败：该标题的网站不存在", abi.NextBusiness.Text(req.Locale), req.Response)
		return abi.Verdict{Observation: &o}
	}
	return abi.Verdict{}
}

// A write's verify is read by the chain's judge, the ResponseContract
// guard, as every other response (§6.4, §13 step 6): swapping that guard
// changes how a verify reads, with no host change. The same answers the
// first-party guard reads as "took effect" and "did not" read the other
// way under a judge with another rule; a judge that fails gives no
// verdict, and the user is asked.
func TestVerifyJudgedByResponseContract(t *testing.T) {
	t.Parallel()
	const noSites = `{"code":200,"data":{"sites":[]}}`
	finish := turn(call("builtin_node_finish", `{"output":"网站 Spring Launch 已创建"}`))
	fail := turn(call("builtin_node_fail", `{"reason":"网站未创建"}`))
	tests := []struct {
		name   string
		rule   string
		verify string
		turns  []scripted.Turn
		ledger abi.LedgerState
		status state.Status
		asked  bool
		tool   string // the verify's trace line
	}{
		{name: "first-party: a site found took effect", verify: sites, turns: []scripted.Turn{finish},
			ledger: abi.LedgerSuccess, status: state.Done, tool: "query_site SUCCESS stalls=1"},
		{name: "first-party: an empty list took effect", verify: noSites, turns: []scripted.Turn{finish},
			ledger: abi.LedgerSuccess, status: state.Done, tool: "query_site SUCCESS stalls=1"},
		{name: "swapped: a site found did not take effect", rule: "inverted", verify: sites, turns: []scripted.Turn{fail},
			ledger: abi.LedgerFailed, status: state.Failed, tool: "query_site FAILED TOOL_BUSINESS_FAILED stalls=1"},
		{name: "swapped: an empty list took effect", rule: "inverted", verify: noSites, turns: []scripted.Turn{finish},
			ledger: abi.LedgerSuccess, status: state.Done, tool: "query_site SUCCESS stalls=1"},
		{name: "the judge fails: the user is asked", rule: "trap", verify: sites, turns: []scripted.Turn{finish}, asked: true,
			ledger: abi.LedgerSuccess, status: state.Done, tool: "query_site REJECTED GUARD_UNAVAILABLE stalls=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := nativeGuards()
			if tt.rule != "" {
				g["ResponseContract"] = siteJudge{first: g["ResponseContract"], rule: tt.rule}
			}
			turns := append(append([]scripted.Turn(nil), gatedTurns...), tt.turns...)
			h := newHarness(t, setup{contract: verifiedContract, guards: g, turns: turns, answers: map[string][]answer{
				"query_space": {{body: spaces}}, "create_site": {{err: chain.ErrTimeout}}, "query_site": {{body: tt.verify}}}})
			_, err := h.runner.Run(ctx, "n1")
			must(t, err)
			exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
			must(t, err)
			if tt.asked {
				if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendVerify {
					t.Fatalf("exit %+v", exit)
				}
				exit, err = h.runner.AnswerVerify(ctx, "n1", true)
				must(t, err)
			}
			if exit.Status != tt.status {
				t.Fatalf("exit %+v", exit)
			}
			end := map[state.Status]string{state.Done: "builtin_node_finish SUCCESS stalls=1", state.Failed: "builtin_node_fail SUCCESS stalls=1"}[tt.status]
			h.wantTools("query_space SUCCESS stalls=0", "create_site DEFERRED APPROVAL_REQUIRED stalls=0", "builtin_node_approval SUCCESS stalls=0",
				"create_site FAILED TOOL_TIMEOUT stalls=1", tt.tool, end)
			l, _ := h.store.Ledger("t1")
			if len(l) != 1 || l[0].State != tt.ledger {
				t.Fatalf("ledger %+v", l)
			}
			if tt.rule == "inverted" && tt.ledger == abi.LedgerFailed {
				msgs := h.model.reqs[len(h.model.reqs)-1].Messages
				want := "已核实：写操作 create_site 未生效（回查 query_site 判定失败）：业务失败：该标题的网站不存在。下一步：" + abi.NextBusiness.Text(abi.LocaleZH) +
					"\n工具返回：\n" + sites
				if got := msgs[len(msgs)-1].Content; got != want {
					t.Fatalf("model read %q, want %q", got, want)
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

// tooEarlyText is what a negative verification of create_site (timeoutMs
// 200) reads at fixedClock, when the write started at fixedClock.
const tooEarlyText = "写操作 create_site 的调用可能仍在进行（到 2026-03-01T09:00:01Z 为止），此前核实未发现它生效不能作为结论。" +
	"下一步：1 秒后（2026-03-01T09:00:01Z 之后）再核实一次，不要再次调用该写工具"

// A dead process's write may still be on the tool server's call: a
// negative verification before the entry's start plus the write's call
// timeout settles nothing and says when to ask again; a positive one, or
// "yes", counts at once; after the window "no" settles the write FAILED.
func TestVerifyTooEarly(t *testing.T) {
	t.Parallel()
	args := []byte(`{"spaceId":42,"title":"Spring Launch"}`)
	fail := turn(call("builtin_node_fail", `{"reason":"网站未创建"}`))
	done := turn(call("builtin_node_finish", `{"output":"网站已创建"}`))
	no, yes := false, true
	tests := []struct {
		name    string
		verify  []answer
		answer  *bool // the user's answer; nil: the verify tool's
		turns   []scripted.Turn
		early   bool // the first answer is refused as too early
		status  state.Status
		ledger  abi.LedgerState
		queries int // verify calls made
	}{
		{name: "verify: not found early, then late", verify: []answer{{body: notFound}, {body: notFound}}, turns: []scripted.Turn{fail},
			early: true, status: state.Failed, ledger: abi.LedgerFailed, queries: 2},
		{name: "verify: found early", verify: []answer{{body: sites}}, turns: []scripted.Turn{done},
			status: state.Done, ledger: abi.LedgerSuccess, queries: 1},
		{name: "user: no early, then late", answer: &no, turns: []scripted.Turn{fail},
			early: true, status: state.Failed, ledger: abi.LedgerFailed},
		{name: "user: yes early", answer: &yes, turns: []scripted.Turn{done},
			status: state.Done, ledger: abi.LedgerSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, setup{contract: verifiedContract, turns: tt.turns, answers: map[string][]answer{"query_site": tt.verify}})
			c, _, err := contract.Parse("site.builder", []byte(verifiedContract))
			must(t, err)
			key := c.Tool("create_site").KeyFor(args)
			must(t, h.store.RecordCall("t1", "call_9_1", args))
			must(t, h.store.Apply("n1", []abi.Effect{{Kind: abi.EffectLedgerReserve,
				Payload: []byte(`{"tool":"create_site","key":"` + key + `","argsDigest":"` + state.ArgsDigest(args) + `","callId":"call_9_1","approved":true}`)}}))
			_, err = h.runner.Recover()
			must(t, err)
			before, _ := h.store.Messages("n1")
			answerIt := func() (loop.Exit, error) {
				if tt.answer == nil {
					return h.runner.VerifyNode(ctx, "n1")
				}
				return h.runner.AnswerVerify(ctx, "n1", *tt.answer)
			}
			exit, err := answerIt()
			if tt.early {
				var te *loop.VerifyTooEarlyError
				if !errors.As(err, &te) || !errors.Is(err, loop.ErrVerifyTooEarly) {
					t.Fatalf("answer before the window: %+v %v", exit, err)
				}
				if te.Tool != "create_site" || te.RetryAfter != 200*time.Millisecond || !te.Until.Equal(fixedClock.Add(200*time.Millisecond)) {
					t.Fatalf("too early %+v", te)
				}
				if o := te.Observation; o.Outcome != abi.OutcomeDeferred || o.Code != abi.WriteVerifyTooEarly || o.Message() != tooEarlyText {
					t.Fatalf("observation %+v: %q", o, o.Message())
				}
				// Nothing settled, nothing said to the model: the node waits.
				n, _ := h.store.Node("n1")
				if n.Status != state.Suspended || n.Suspension == nil || n.Suspension.Kind != abi.SuspendVerify {
					t.Fatalf("node %+v", n)
				}
				if l, _ := h.store.Ledger("t1"); len(l) != 1 || l[0].State != abi.LedgerUnknownPreCall {
					t.Fatalf("ledger %+v", l)
				}
				if after, _ := h.store.Messages("n1"); len(after) != len(before) {
					t.Fatalf("messages %d, were %d", len(after), len(before))
				}
				if len(h.model.reqs) != 0 {
					t.Fatalf("the model ran: %d requests", len(h.model.reqs))
				}
				// The window ends at start plus timeoutMs: asking then counts.
				*h.clock = fixedClock.Add(200 * time.Millisecond)
				exit, err = answerIt()
			}
			must(t, err)
			if exit.Status != tt.status {
				t.Fatalf("exit %+v", exit)
			}
			if l, _ := h.store.Ledger("t1"); len(l) != 1 || l[0].State != tt.ledger {
				t.Fatalf("ledger %+v", l)
			}
			calls := strings.Join(h.tools.called(), "\n")
			if strings.Contains(calls, "create_site ") || strings.Count(calls, "query_site ") != tt.queries {
				t.Fatalf("tool calls %v", h.tools.called())
			}
			h.done()
		})
	}
}

// The start of a write is the runner's clock when it commits the
// reservation, not the store's.
func TestWriteStartFromRunnerClock(t *testing.T) {
	t.Parallel()
	later := fixedClock.Add(90 * time.Second)
	h := newHarness(t, setup{turns: append(append([]scripted.Turn(nil), gatedTurns...), turn(call("builtin_node_fail", `{"reason":"x"}`))),
		answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{err: chain.ErrTimeout}}},
		config:  func(c *loop.Config) { c.Now = func() time.Time { return later } }})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	_, err = h.runner.Approve(ctx, "n1", loop.Confirm)
	must(t, err)
	l, _ := h.store.Ledger("t1")
	if len(l) != 1 || l[0].StartedAt != later.Format(time.RFC3339Nano) || l[0].UpdatedAt != fixedClock.Format(time.RFC3339) {
		t.Fatalf("ledger %+v", l)
	}
}
