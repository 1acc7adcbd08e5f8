package loop_test

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// A CONFIRM of a held write whose arguments are no longer the ones the user
// was shown (CONTRACT_SPEC §14.1 step 3) runs nothing: the model reads
// DEFERRED APPROVAL_ARGS_CHANGED, must ask for approval again, and only the
// second CONFIRM, of the arguments now held, runs the write.
func TestConfirmOfChangedArgumentsAsksAgain(t *testing.T) {
	t.Parallel()
	const changed = `{"title":"Spring","spaceId":42}`
	tests := []struct {
		locale  abi.Locale
		message string
	}{
		{abi.LocaleZH, "待确认的写操作 create_site 的参数已不是用户确认时看到的参数，未执行。下一步：重新调用 builtin_node_approval 申请确认"},
		{abi.LocaleEN, "the held arguments of write create_site are no longer the ones the user was shown, so it was not run. Next: ask for confirmation again with builtin_node_approval"},
	}
	for _, tt := range tests {
		t.Run(string(tt.locale), func(t *testing.T) {
			t.Parallel()
			turns := append(append([]scripted.Turn(nil), gatedTurns...),
				scripted.Turn{Expect: &scripted.Expect{Tool: "create_site", Contains: tt.message}, ToolCalls: []scripted.Call{call("builtin_node_approval", approveArgs)}},
				turn(call("builtin_node_finish", `{"output":"网站 Spring 已创建"}`)))
			h := newHarness(t, setup{turns: turns, config: func(c *loop.Config) { c.Locale = tt.locale },
				answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: created}}}})
			_, err := h.runner.Run(ctx, "n1")
			must(t, err)
			// The held write changes after the user was asked.
			must(t, h.store.Gate("n1", "create_site", "call_2_1", []byte(changed)))
			exit, err := h.runner.Approve(ctx, "n1", loop.Confirm)
			must(t, err)
			if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendApproval || !strings.Contains(exit.Suspension.Question, "Spring\n") {
				t.Fatalf("exit %+v", exit)
			}
			if got := h.tools.called(); len(got) != 1 {
				t.Fatalf("the changed write ran: %v", got)
			}
			var ev loop.Event
			for _, e := range h.trace.Events() {
				if e.Kind == loop.KindTool && e.Name == string(abi.ApprovalArgsChanged) {
					ev = e
				}
			}
			if ev.Tool != "create_site" || ev.Outcome != "DEFERRED" || ev.Code != "agent_runtime.42265" || ev.Message != tt.message ||
				ev.Input != changed || ev.Stalls != 0 || ev.Status != string(state.Running) {
				t.Fatalf("event %+v", ev)
			}
			exit, err = h.runner.Approve(ctx, "n1", loop.Confirm)
			if err != nil {
				t.Fatalf("%v\n%s", err, strings.Join(h.toolEvents(), "\n"))
			}
			if exit.Status != state.Done {
				t.Fatalf("exit %+v", exit)
			}
			if got := h.tools.called(); len(got) != 2 || got[1] != "create_site "+changed {
				t.Fatalf("tool calls %v", got)
			}
			h.wantTools(
				"query_space SUCCESS stalls=0",
				"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
				"builtin_node_approval SUCCESS stalls=0",
				"create_site DEFERRED APPROVAL_ARGS_CHANGED stalls=0",
				"builtin_node_approval SUCCESS stalls=0",
				"create_site SUCCESS stalls=0",
				"builtin_node_finish SUCCESS stalls=0",
			)
			h.done()
		})
	}
}
