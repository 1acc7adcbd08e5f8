package loop_test

import (
	"errors"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// A process that died before it saved a task's status leaves the task as
// it was; StoppedTask reads where its nodes stopped it, without running
// anything, and records it, on a runner that did not run the task.
func TestStoppedTask(t *testing.T) {
	t.Parallel()
	ask := turn(call("builtin_node_follow_up", `{"question":"哪个空间？","expectedFields":["spaceName"]}`))
	finish := turn(call("builtin_node_finish", `{"output":"已完成"}`))
	tests := []struct {
		name  string
		turns []scripted.Turn
		// run runs the task first; otherwise it is created with graph.
		run   bool
		graph string
		// stopped, status, node, kind, output: what StoppedTask finds.
		stopped bool
		status  state.Status
		node    string
		kind    string
		output  string
	}{
		{name: "ended", turns: []scripted.Turn{finish}, run: true, stopped: true, status: state.Done, output: "已完成"},
		{name: "waiting for the user", turns: []scripted.Turn{ask}, run: true, stopped: true, status: state.Suspended, node: "t1.n1", kind: abi.SuspendFollowUp},
		{name: "a delegated pre-node waiting for the user", turns: []scripted.Turn{
			turn(call("builtin_node_delegate", `{"skillKey":"space.query","objective":"找空间"}`)),
			turn(call("query_space", `{"spaceName":"市场"}`)),
			turn(call("builtin_node_follow_up", `{"question":"没有找到空间，是哪个空间？"}`)),
		}, run: true, stopped: true, status: state.Suspended, node: "t1.n1.d1", kind: abi.SuspendFollowUp},
		{name: "a node never started", graph: `{"objective":"x","nodes":[{"id":"n1","skill_key":"site.builder"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, tt.turns, map[string][]answer{"query_space": {{body: notFound}}})
			if tt.run {
				_, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: []string{"site.builder"}})
				must(t, err)
			} else {
				must(t, h.store.CreateTask(state.Task{ID: "t1", Objective: "x"}))
				must(t, h.store.SetTaskGraph("t1", []byte(tt.graph)))
			}
			// The task's status was never saved.
			must(t, h.store.SetTaskStatus("t1", state.Running))
			other, err := loop.New(h.opts)
			must(t, err)
			exit, stopped, err := other.StoppedTask("t1")
			must(t, err)
			if stopped != tt.stopped {
				t.Fatalf("stopped %v, want %v (%+v)", stopped, tt.stopped, exit)
			}
			want := state.Running
			if tt.stopped {
				kind := ""
				if exit.Suspension != nil {
					kind = exit.Suspension.Kind
				}
				if exit.Status != tt.status || exit.Node != tt.node || kind != tt.kind || exit.Output != tt.output {
					t.Fatalf("exit %+v, want %s at %q (%s) with output %q", exit, tt.status, tt.node, tt.kind, tt.output)
				}
				want = tt.status
			}
			if tk, err := h.store.Task("t1"); err != nil || tk.Status != want {
				t.Fatalf("task %+v %v, want %s", tk, err, want)
			}
			if _, _, err := other.StoppedTask("t9"); !errors.Is(err, loop.ErrUnknownTask) {
				t.Fatalf("unknown task: %v", err)
			}
		})
	}
}

// RestartTask runs a task cut short before its graph was saved: one the
// store does not know runs as new, one created but never planned is
// planned and run now.
func TestRestartTask(t *testing.T) {
	t.Parallel()
	for _, created := range []bool{false, true} {
		t.Run(map[bool]string{false: "never created", true: "created, never planned"}[created], func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, []scripted.Turn{turn(call("builtin_node_finish", `{"output":"已完成"}`))}, nil)
			if created {
				must(t, h.store.CreateTask(state.Task{ID: "t1", Objective: userAsk}))
			}
			exit, err := h.runner.RestartTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: []string{"site.builder"}})
			must(t, err)
			if exit.Status != state.Done || exit.Output != "已完成" || len(exit.Plan.Nodes) != 1 {
				t.Fatalf("exit %+v", exit)
			}
			if tk, err := h.store.Task("t1"); err != nil || tk.Status != state.Done || len(tk.Graph) == 0 {
				t.Fatalf("task %+v %v", tk, err)
			}
		})
	}
}
