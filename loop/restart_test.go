package loop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// A task suspended under one runner is run on by another runner over the
// same store (a restart, or another instance): the task graph, including
// which node waits for a delegated pre-node, comes from the store.
func TestResumeTaskOnAnotherRunner(t *testing.T) {
	t.Parallel()
	ask := turn(call("builtin_node_follow_up", `{"question":"哪个空间？","expectedFields":["spaceName"]}`))
	tests := []struct {
		name    string
		turns   []scripted.Turn
		waiting string // the node that suspended
		output  string
	}{
		{"a node's follow-up", []scripted.Turn{ask, turn(call("builtin_node_finish", `{"output":"已完成"}`))}, "t1.n1", "已完成"},
		{"a delegated pre-node's follow-up", []scripted.Turn{
			turn(call("builtin_node_delegate", `{"skillKey":"space.query","objective":"找空间"}`)),
			turn(call("query_space", `{"spaceName":"市场"}`)),
			turn(call("builtin_node_follow_up", `{"question":"没有找到空间，是哪个空间？"}`)),
			turn(call("builtin_node_finish", `{"output":"市场部空间 id 42"}`)),
			turn(call("builtin_node_finish", `{"output":"已了解空间"}`)),
		}, "t1.n1.d1", "已了解空间"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, tt.turns, map[string][]answer{"query_space": {{body: notFound}}})
			exit, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: []string{"site.builder"}})
			must(t, err)
			if exit.Status != state.Suspended || exit.Node != tt.waiting {
				t.Fatalf("exit %+v", exit)
			}
			if tk, _ := h.store.Task("t1"); !strings.Contains(string(tk.Graph), `"skill_key":"site.builder"`) {
				t.Fatalf("graph %s", tk.Graph)
			}
			other, err := loop.New(h.opts)
			must(t, err)
			if _, err := other.AnswerFollowUp(ctx, tt.waiting, "市场部"); err != nil {
				t.Fatal(err)
			}
			exit, err = other.ResumeTask(ctx, "t1")
			must(t, err)
			if exit.Status != state.Done || exit.Output != tt.output || len(exit.Plan.Nodes) != 1 || exit.Plan.Source != loop.PlanSingle {
				t.Fatalf("exit %+v", exit)
			}
			if _, err := other.ResumeTask(ctx, "t9"); !errors.Is(err, loop.ErrUnknownTask) {
				t.Fatalf("unknown task: %v", err)
			}
			h.done()
		})
	}
}

// A graph the store holds that this runner cannot run is an error, not a
// guess.
func TestResumeTaskBadGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, graph, want string
	}{
		{"not a graph", `[1]`, "loop: resume task t1: stored graph: json: cannot unmarshal array"},
		{"unknown skill", `{"objective":"x","nodes":[{"id":"n1","skill_key":"gone"}]}`, `loop: resume task t1: node n1: skill "gone": unknown skill`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, nil, nil)
			must(t, h.store.CreateTask(state.Task{ID: "t1", Objective: "x"}))
			must(t, h.store.SetTaskGraph("t1", []byte(tt.graph)))
			if _, err := h.runner.ResumeTask(ctx, "t1"); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want %s", err, tt.want)
			}
		})
	}
}

// Recover suspends the node whose write a dead process left STARTED for
// VERIFY at once, its task too; VerifyNode settles the write with the
// verify tool and the node goes on. The write is never sent again.
func TestRecoverThenVerifyNode(t *testing.T) {
	t.Parallel()
	args := []byte(`{"spaceId":42,"title":"Spring Launch"}`)
	tests := []struct {
		name     string
		contract string
		verify   []answer
		err      error
		status   state.Status
		ledger   abi.LedgerState
	}{
		{name: "verified", contract: verifiedContract, verify: []answer{{body: sites}}, status: state.Done, ledger: abi.LedgerSuccess},
		{name: "no verify tool", contract: skillContract, err: loop.ErrNoVerifyTool, status: state.Suspended, ledger: abi.LedgerUnknownPreCall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var turns []scripted.Turn
			if tt.err == nil {
				turns = []scripted.Turn{{Expect: &scripted.Expect{Tool: "query_site", Contains: "已核实"},
					ToolCalls: turn(call("builtin_node_finish", `{"output":"网站已创建"}`)).ToolCalls}}
			}
			h := newHarness(t, setup{contract: tt.contract, turns: turns, answers: map[string][]answer{"query_site": tt.verify}})
			c, _, err := contract.Parse("site.builder", []byte(tt.contract))
			must(t, err)
			key := c.Tool("create_site").KeyFor(args)
			must(t, h.store.RecordCall("t1", "call_9_1", args))
			must(t, h.store.Apply("n1", []abi.Effect{{Kind: abi.EffectLedgerReserve,
				Payload: []byte(`{"tool":"create_site","key":"` + key + `","argsDigest":"` + state.ArgsDigest(args) + `","callId":"call_9_1","approved":true}`)}}))
			if _, err := h.runner.Recover(); err != nil {
				t.Fatal(err)
			}
			n, _ := h.store.Node("n1")
			if n.Status != state.Suspended || n.Suspension.Kind != abi.SuspendVerify || n.Suspension.Tool != "create_site" || string(n.Suspension.Args) != string(args) {
				t.Fatalf("node %+v", n)
			}
			if tk, _ := h.store.Task("t1"); tk.Status != state.Suspended {
				t.Fatalf("task %+v", tk)
			}
			exit, err := h.runner.VerifyNode(ctx, "n1")
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if n, _ := h.store.Node("n1"); n.Status != tt.status || (tt.err == nil && exit.Status != tt.status) {
				t.Fatalf("node %+v exit %+v", n, exit)
			}
			l, _ := h.store.Ledger("t1")
			if len(l) != 1 || l[0].State != tt.ledger {
				t.Fatalf("ledger %+v", l)
			}
			if strings.Contains(strings.Join(h.tools.called(), "\n"), "create_site ") {
				t.Fatalf("the write was sent again: %v", h.tools.called())
			}
			if _, err := h.runner.VerifyNode(ctx, "n1"); tt.err == nil && !errors.Is(err, loop.ErrNotSuspended) {
				t.Fatalf("verify again: %v", err)
			}
			h.done()
		})
	}
}
