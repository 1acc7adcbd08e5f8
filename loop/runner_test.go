package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

var ctx = context.Background()

const (
	approveArgs = `{"summary":"在市场部空间创建网站 Spring Launch","toolName":"create_site"}`
	siteArgs    = `{"title":"Spring Launch"}`
)

// gatedTurns query the space, call the write (held), and ask for approval:
// TOOL_OBSERVATION §9 scenario 1.
var gatedTurns = []scripted.Turn{
	turn(call("query_space", `{"spaceName":"市场部"}`)),
	turn(call("create_site", siteArgs)),
	turn(call("builtin_node_approval", approveArgs)),
}

// Scenario 1: the write is DEFERRED (not a no-progress turn, no REACT
// no_tool_calls), then the approval suspends the node as APPROVAL.
func TestScenario1WriteDeferredThenApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: gatedTurns, answers: map[string][]answer{"query_space": {{body: spaces}}}})
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendApproval || exit.Suspension.Tool != "create_site" {
		t.Fatalf("exit %+v", exit)
	}
	if want := "在市场部空间创建网站 Spring Launch\n网站标题：Spring Launch\n空间：42"; exit.Suspension.Question != want {
		t.Fatalf("question %q, want %q", exit.Suspension.Question, want)
	}
	h.wantTools(
		"query_space SUCCESS stalls=0",
		"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
		"builtin_node_approval SUCCESS stalls=0",
	)
	if got := h.toolMessage(2, 1); got != "该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 create_site" {
		t.Fatalf("write message %q", got)
	}
	e := h.event(loop.KindTool, "create_site")
	if e.Code != "agent_runtime.42221" || e.Category != "permission" || e.Level != "INFO" {
		t.Fatalf("event %+v", e)
	}
	for _, e := range h.trace.Events() {
		if e.Kind == loop.KindReact {
			t.Fatalf("a REACT event: %+v", e)
		}
	}
	if s := h.event(loop.KindSuspend, ""); s.Status != "APPROVAL" || s.Tool != "create_site" {
		t.Fatalf("suspend event %+v", s)
	}
	// The approval was only offered once the write was held.
	for i, req := range h.model.reqs {
		offered := false
		for _, tl := range req.Tools {
			offered = offered || tl.Name == "builtin_node_approval"
		}
		if offered != (i == 2) {
			t.Fatalf("turn %d: builtin_node_approval offered=%v", i+1, offered)
		}
	}
	if got := h.tools.called(); len(got) != 1 {
		t.Fatalf("tool calls %v", got)
	}
	h.done()
}

// Scenario 8: after CONFIRM the held write runs through the whole chain,
// succeeds, and the node continues until the model finishes it.
func TestScenario8ConfirmedWriteSucceeds(t *testing.T) {
	t.Parallel()
	turns := append(append([]scripted.Turn(nil), gatedTurns...),
		scripted.Turn{Expect: &scripted.Expect{Tool: "create_site", Contains: "调用成功"}, ToolCalls: []scripted.Call{call("builtin_node_finish", `{"output":"网站 Spring Launch 已创建"}`)}})
	h := newHarness(t, setup{turns: turns, answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: created}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	*h.clock = h.clock.Add(time.Hour)
	exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
	must(t, err)
	if exit.Status != state.Done || exit.Output != "网站 Spring Launch 已创建" {
		t.Fatalf("exit %+v", exit)
	}
	h.wantTools(
		"query_space SUCCESS stalls=0",
		"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
		"builtin_node_approval SUCCESS stalls=0",
		"create_site SUCCESS stalls=0",
		"builtin_node_finish SUCCESS stalls=0",
	)
	if got := h.tools.called(); len(got) != 2 || got[1] != `create_site {"title":"Spring Launch","spaceId":42}` {
		t.Fatalf("tool calls %v", got)
	}
	l, _ := h.store.Ledger("t1")
	if len(l) != 1 || l[0].State != abi.LedgerSuccess || !l[0].Approved {
		t.Fatalf("ledger %+v", l)
	}
	n, _ := h.store.Node("n1")
	if n.Gated != nil || n.Approved != nil || n.Target != "create_site" || !n.TargetClaimed {
		t.Fatalf("node %+v", n)
	}
	if r := h.event(loop.KindResume, ""); r.Status != "APPROVAL" || r.Message != "CONFIRM" {
		t.Fatalf("resume %+v", r)
	}
	h.done()
}

// Scenario 11: the confirmed write fails in business terms; the next step
// is to tell the user and ask, and the model's follow-up suspends the node.
func TestScenario11ConfirmedWriteFails(t *testing.T) {
	t.Parallel()
	turns := append(append([]scripted.Turn(nil), gatedTurns...),
		turn(call("builtin_node_follow_up", `{"question":"标题 Spring Launch 已被占用，换一个标题还是放弃？"}`)),
		turn(call("builtin_node_fail", `{"reason":"用户放弃建站"}`)))
	h := newHarness(t, setup{turns: turns, answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: taken}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
	must(t, err)
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendFollowUp {
		t.Fatalf("exit %+v", exit)
	}
	e := h.trace.Events()
	var write loop.Event
	for _, ev := range e {
		if ev.Kind == loop.KindTool && ev.Tool == "create_site" && ev.Outcome == "FAILED" {
			write = ev
		}
	}
	want := "业务失败 [40901]：标题已被占用。下一步：用 builtin_node_follow_up 向用户说明失败原因并询问如何处理；用户不再继续时 builtin_node_fail；不要自行改用其它写操作补救"
	if write.Name != "TOOL_BUSINESS_FAILED" || write.Message != want || write.Level != "WARN" || write.Stalls != 1 {
		t.Fatalf("write event %+v", write)
	}
	exit, err = h.runner.AnswerFollowUp(ctx, "n1", "算了，不建了")
	must(t, err)
	if exit.Status != state.Failed || exit.Reason != "用户放弃建站" {
		t.Fatalf("exit %+v", exit)
	}
	if got := h.tools.called(); len(got) != 2 {
		t.Fatalf("another write was tried: %v", got)
	}
	h.done()
}

// Scenario 2: approval asked before any write is REJECTED
// APPROVAL_NOT_GATED, telling the model to call the write first, and counts.
func TestScenario2ApprovalNotGated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("builtin_node_approval", approveArgs)),
		turn(call("builtin_node_fail", `{"reason":"放弃"}`)),
	}})
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Failed {
		t.Fatalf("exit %+v", exit)
	}
	// The fail exits the node before anything resets the count.
	h.wantTools("builtin_node_approval REJECTED APPROVAL_NOT_GATED stalls=1", "builtin_node_fail SUCCESS stalls=1")
	if got := h.toolMessage(1, 1); got != "申请确认前没有被写入闸门拦下的写调用。下一步：先直接调用写工具，被拦下后再按提示申请确认" {
		t.Fatalf("message %q", got)
	}
	if e := h.event(loop.KindNode, ""); e.Status != "FAILED" || e.Level != "WARN" || e.Message != "放弃" {
		t.Fatalf("node event %+v", e)
	}
	h.done()
}

// Scenario 6: a parameter whose source does not match is REJECTED, counts
// one no-progress turn, and skips the rest of its wave.
func TestScenario6ProvenanceRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("create_site", `{"title":"Autumn Sale"}`), call("query_site", `{}`)),
		turn(call("builtin_node_fail", `{"reason":"标题不明"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}, "query_site": {{body: sites}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	h.wantTools(
		"query_space SUCCESS stalls=0",
		"create_site REJECTED PARAM_PROVENANCE_ASK_USER stalls=1",
		"query_site SKIPPED",
		"builtin_node_fail SUCCESS stalls=1",
	)
	if got := h.toolMessage(2, 1); got != "参数 [网站标题] 须由用户提供。下一步：调用 builtin_node_follow_up 向用户询问 网站标题" {
		t.Fatalf("message %q", got)
	}
	if got := h.toolMessage(2, 2); got != "同一轮中前面的调用没有成功，本调用未执行。下一步：先按同一轮前面那次调用的返回处理，再决定是否重新调用本工具" {
		t.Fatalf("skipped message %q", got)
	}
	if got := h.tools.called(); len(got) != 1 {
		t.Fatalf("a skipped call ran: %v", got)
	}
	h.done()
}

// Scenario 7: an MCP timeout is FAILED, logged at WARN, and counts.
func TestScenario7Timeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_fail", `{"reason":"空间服务超时"}`)),
	}, answers: map[string][]answer{"query_space": {{err: chain.ErrTimeout}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	e := h.event(loop.KindTool, "query_space")
	if e.Outcome != "FAILED" || e.Name != "TOOL_TIMEOUT" || e.Code != "agent_runtime.40016" || e.Level != "WARN" || e.Stalls != 1 ||
		e.Message != "工具 query_space 在 200ms 内没有返回。下一步：缩小查询范围后重试；写操作不要重复调用，等待核实" {
		t.Fatalf("event %+v", e)
	}
	h.done()
}

// Scenario 9: a query, then finish at once: the node prompt never says to
// write outputs (the only output is optional, so there is no phase hint).
func TestScenario9QueryThenFinish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`), call("query_site", `{}`)),
		turn(call("builtin_node_finish", `{"output":"市场部空间有网站：官网"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}, "query_site": {{body: sites}}}})
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Done {
		t.Fatalf("exit %+v", exit)
	}
	h.wantTools("query_space SUCCESS stalls=0", "query_site SUCCESS stalls=0", "builtin_node_finish SUCCESS stalls=0")
	for i, req := range h.model.reqs {
		sys := req.Messages[0].Content
		for _, bad := range []string{"写 outputs", "阶段提示", "builtin_output_set"} {
			if strings.Contains(sys, bad) {
				t.Fatalf("turn %d prompt says %q:\n%s", i+1, bad, sys)
			}
		}
		for _, must := range []string{`按返回中"下一步："之后的内容执行`, "不要换着参数反复重试", "写工具先直接调用", "你是建站助手", "帮用户建网站", "只处理建站", "简洁", "不编造数据",
			"先查询空间，再创建网站。", "- create_site：创建网站（写操作，须经用户确认）"} {
			if !strings.Contains(sys, must) {
				t.Fatalf("turn %d prompt lacks %q:\n%s", i+1, must, sys)
			}
		}
	}
	h.done()
}

// Scenario 12: a downstream business failure is TOOL_BUSINESS_FAILED with
// the downstream code in the reason and a next step.
func TestScenario12BusinessFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_fail", `{"reason":"空间服务维护中"}`)),
	}, answers: map[string][]answer{"query_space": {{body: maintain}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	e := h.event(loop.KindTool, "query_space")
	want := "业务失败 [50001]：空间服务维护中。下一步：根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail"
	if e.Outcome != "FAILED" || e.Name != "TOOL_BUSINESS_FAILED" || e.Code != "agent_runtime.40004" || e.Message != want || e.Stalls != 1 {
		t.Fatalf("event %+v", e)
	}
	h.done()
}

// The counting rules end to end: text-only turns and stalls fail the node
// at the limit; DEFERRED neither counts nor resets; SUCCESS resets.
func TestNoProgressLimit(t *testing.T) {
	t.Parallel()
	t.Run("text-only turns", func(t *testing.T) {
		t.Parallel()
		var turns []scripted.Turn
		for i := 0; i < loop.DefaultNoProgressLimit; i++ {
			turns = append(turns, scripted.Turn{Text: "我想想"})
		}
		h := newHarness(t, setup{turns: turns})
		exit, err := h.runner.Run(ctx, "n1")
		must(t, err)
		if exit.Status != state.Failed || exit.Reason != "节点连续 5 轮没有进展" {
			t.Fatalf("exit %+v", exit)
		}
		if e := h.event(loop.KindReact, ""); e.Status != "no_tool_calls" || e.Stalls != 1 {
			t.Fatalf("react event %+v", e)
		}
		h.done()
	})
	t.Run("DEFERRED in between does not reset, SUCCESS does", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, setup{turns: []scripted.Turn{
			{Text: "先想想"}, // 1
			turn(call("query_space", `{"spaceName":"市场部"}`)), // FAILED: 2
			turn(call("query_space", `{"spaceName":"市场部"}`)), // SUCCESS: 0
			{Text: "嗯"},                                         // 1
			turn(call("create_site", siteArgs)),                 // DEFERRED: 1
			turn(call("builtin_node_finish", `{"output":"x"}`)), // refused (target not done): 2
			turn(call("builtin_node_approval", approveArgs)),
		}, answers: map[string][]answer{"query_space": {{err: chain.ErrUnreachable}, {body: spaces}}}})
		exit, err := h.runner.Run(ctx, "n1")
		must(t, err)
		if exit.Status != state.Suspended {
			t.Fatalf("exit %+v", exit)
		}
		h.wantTools(
			"query_space FAILED TOOL_UNREACHABLE stalls=2",
			"query_space SUCCESS stalls=0",
			"create_site DEFERRED APPROVAL_REQUIRED stalls=1",
			"builtin_node_finish REJECTED FINISH_NEED_TARGET stalls=2",
			"builtin_node_approval SUCCESS stalls=2",
		)
		n, _ := h.store.Node("n1")
		if n.Stalls != 2 || n.Rounds != 7 {
			t.Fatalf("counters kept: stalls %d rounds %d", n.Stalls, n.Rounds)
		}
		h.done()
	})
	t.Run("round limit", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, setup{turns: []scripted.Turn{
			turn(call("create_site", siteArgs)), turn(call("create_site", siteArgs)), turn(call("create_site", siteArgs)),
		}, config: func(c *loop.Config) { c.MaxRounds = 3 }})
		exit, err := h.runner.Run(ctx, "n1")
		must(t, err)
		if exit.Status != state.Failed || exit.Reason != "节点已达到总轮次上限（3 轮）" {
			t.Fatalf("exit %+v", exit)
		}
		h.done()
	})
}

// A follow-up answer makes its expected fields USER sources: the title the
// user gives in the answer passes the provenance check.
func TestFollowUpAnswerIsUserSource(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_follow_up", `{"question":"网站标题用什么？","expectedFields":["title"]}`)),
		turn(call("create_site", `{"title":"Autumn Sale"}`)),
		turn(call("builtin_node_approval", `{"summary":"创建网站 Autumn Sale","toolName":"create_site"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}}})
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendFollowUp || exit.Suspension.ExpectedFields[0] != "title" {
		t.Fatalf("exit %+v", exit)
	}
	exit, err = h.runner.AnswerFollowUp(ctx, "n1", "就叫 Autumn Sale 吧")
	must(t, err)
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendApproval {
		t.Fatalf("exit %+v", exit)
	}
	h.wantTools(
		"query_space SUCCESS stalls=0",
		"builtin_node_follow_up SUCCESS stalls=0",
		"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
		"builtin_node_approval SUCCESS stalls=0",
	)
	msgs := h.model.reqs[2].Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != "用户回答了追问「网站标题用什么？」（参数：title）：就叫 Autumn Sale 吧" {
		t.Fatalf("answer message %+v", last)
	}
	if _, err := h.runner.AnswerFollowUp(ctx, "n1", "again"); !errors.Is(err, loop.ErrNotSuspended) {
		t.Fatalf("answer to an approval: %v", err)
	}
	h.done()
}

// REJECT and CANCEL do not run the write; they cancel node and task and
// say what was not done. A CONFIRM past reconfirm-after asks again.
func TestApprovalDecisions(t *testing.T) {
	t.Parallel()
	for _, d := range []loop.Decision{loop.Reject, loop.Cancel} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, setup{turns: gatedTurns, answers: map[string][]answer{"query_space": {{body: spaces}}}})
			_, err := h.runner.Run(ctx, "n1")
			must(t, err)
			exit, err := h.runner.Approve(ctx, "n1", d)
			must(t, err)
			want := map[loop.Decision]string{loop.Reject: "用户拒绝了确认，未执行写操作 create_site。", loop.Cancel: "用户取消了任务，未执行写操作 create_site。"}[d] +
				"在市场部空间创建网站 Spring Launch\n网站标题：Spring Launch\n空间：42"
			if exit.Status != state.Cancelled || exit.Reply != want {
				t.Fatalf("exit %+v", exit)
			}
			task, _ := h.store.Task("t1")
			n, _ := h.store.Node("n1")
			if task.Status != state.Cancelled || n.Status != state.Cancelled || n.Gated != nil || len(h.tools.called()) != 1 {
				t.Fatalf("task %+v node %+v calls %v", task, n, h.tools.called())
			}
			if _, err := h.runner.Approve(ctx, "n1", loop.Confirm); !errors.Is(err, loop.ErrNotSuspended) {
				t.Fatalf("approve a cancelled node: %v", err)
			}
		})
	}
	t.Run("expired confirmation asks again", func(t *testing.T) {
		t.Parallel()
		turns := append(append([]scripted.Turn(nil), gatedTurns...), turn(call("builtin_node_finish", `{"output":"done"}`)))
		h := newHarness(t, setup{turns: turns, answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: created}}}})
		_, err := h.runner.Run(ctx, "n1")
		must(t, err)
		*h.clock = h.clock.Add(25 * time.Hour)
		exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
		must(t, err)
		if exit.Status != state.Suspended || !exit.Suspension.At.Equal(*h.clock) || len(h.tools.called()) != 1 {
			t.Fatalf("exit %+v calls %v", exit, h.tools.called())
		}
		var expired loop.Event
		for _, e := range h.trace.Events() {
			if e.Kind == loop.KindSuspend && e.Name == "APPROVAL_EXPIRED" {
				expired = e
			}
		}
		if expired.Message != "对 create_site 的确认已超过有效期。下一步：重新调用 builtin_node_approval 申请确认" {
			t.Fatalf("expired event %+v", expired)
		}
		// Confirmed in time, the write runs.
		*h.clock = h.clock.Add(time.Minute)
		exit, err = h.runner.Approve(ctx, "n1", loop.Confirm)
		must(t, err)
		if exit.Status != state.Done || len(h.tools.called()) != 2 {
			t.Fatalf("exit %+v calls %v", exit, h.tools.called())
		}
	})
	t.Run("unknown decision", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, setup{turns: gatedTurns, answers: map[string][]answer{"query_space": {{body: spaces}}}})
		_, err := h.runner.Run(ctx, "n1")
		must(t, err)
		if _, err := h.runner.Approve(ctx, "n1", "MAYBE"); !errors.Is(err, loop.ErrUnknownDecision) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestPhaseHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contract string
		written  map[string]abi.OutputValue
		want     string
	}{
		{"no outputs", `{}`, nil, ""},
		{"only optional outputs", `{"outputs":{"a":{"required":false}}}`, nil, ""},
		{"required missing", `{"outputs":{"b":{},"a":{},"c":{"required":false}}}`, map[string]abi.OutputValue{"b": {}}, "尚未写入的必填产出：a"},
		{"all written", `{"outputs":{"b":{},"a":{}}}`, map[string]abi.OutputValue{"a": {}, "b": {}}, "必填产出已全部写入：a、b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parse(t, tt.contract)
			if got := loop.PhaseHint(c, tt.written, abi.LocaleZH); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
