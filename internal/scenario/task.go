package scenario

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// TaskSpec runs the user's messages as whole tasks of one session: each is
// planned over the candidate skills (the model's planning turn is one of
// the scripted turns when there is more than one candidate or the skill's
// mode is PLAN), its provider pre-nodes are inserted, its nodes run in
// order and may delegate.
type TaskSpec struct {
	// Messages are the user's follow-up messages after user, each a task
	// of the same session (t2, t3, …).
	Messages []string `json:"messages,omitempty"`
	// Skills are the candidate skills of every task; empty means all.
	Skills []string `json:"skills,omitempty"`
}

// GraphNode is one node of a task as it ran: its id ("t1.n1", a delegated
// "t1.n1.d1"), its skill, its final status, the nodes whose evidence it
// may use (those it depends on and those it delegated, nearest first), the
// node that delegated it, and its completion target (CONTRACT_SPEC §10.1)
// with whether the node's first write claimed it.
type GraphNode struct {
	Node     string   `json:"node"`
	Skill    string   `json:"skill,omitempty"`
	Status   string   `json:"status,omitempty"`
	Upstream []string `json:"upstream,omitempty"`
	Parent   string   `json:"parent,omitempty"`
	Target   string   `json:"target,omitempty"`
	Claimed  bool     `json:"claimed,omitempty"`
}

// String is the node as one line: "t1.n2 site.builder DONE upstream t1.n1 →
// create_site", with "(claimed)" after a target the first write claimed
// and "← t1.n1" for the delegating node.
func (g GraphNode) String() string {
	s := g.Node + " " + g.Skill + " " + g.Status
	if len(g.Upstream) > 0 {
		s += " upstream " + strings.Join(g.Upstream, ",")
	}
	if g.Parent != "" {
		s += " ← " + g.Parent
	}
	if g.Target != "" {
		s += " → " + g.Target
		if g.Claimed {
			s += " (claimed)"
		}
	}
	return s
}

// runTasks plays a task scenario: each message is a task, driven through
// its suspensions by the scripted user (the suspended node is answered,
// then the task resumed).
func runTasks(ctx context.Context, s Scenario, o Options, rep Report, runner *loop.Runner, st *state.Memory, rec *loop.Recorder,
	script *turns, prompts *promptLog, local *tscripted.Server, tp *tenantPlugins, sleeps *[]time.Duration, advance func(time.Duration)) (Report, error) {
	var miss []string
	msgs := append([]string{s.User}, s.Task.Messages...)
	reply := 0
	var last loop.TaskExit
	var lastTask string
	var err error
	for ti, msg := range msgs {
		id := fmt.Sprintf("t%d", ti+1)
		lastTask = id
		last, err = runner.RunTask(ctx, loop.TaskInput{ID: id, Objective: msg, Skills: s.Task.Skills, Platform: s.Platform})
		for err == nil && last.Status == state.Suspended && last.Suspension != nil && reply < len(s.Replies) {
			r := s.Replies[reply]
			reply++
			if d, _ := time.ParseDuration(r.After); d > 0 {
				advance(d)
			}
			switch kind := last.Suspension.Kind; {
			case kind == abi.SuspendFollowUp && r.Answer != "":
				_, err = runner.AnswerFollowUp(ctx, last.Node, r.Answer)
			case kind == abi.SuspendApproval && r.Decision != "":
				_, err = runner.Approve(ctx, last.Node, loop.Decision(r.Decision))
			case kind == abi.SuspendVerify && r.Verified != "":
				_, err = runner.AnswerVerify(ctx, last.Node, r.Verified == "yes")
			default:
				miss = append(miss, fmt.Sprintf("reply %d: node %s is suspended for %s, the reply does not answer it", reply, last.Node, kind))
				err = errStop
			}
			if err == nil {
				last, err = runner.ResumeTask(ctx, id)
			}
		}
		if err != nil || last.Status != state.Done {
			break
		}
	}
	if err != nil && !errors.Is(err, errStop) {
		if o.Model == nil || !errors.Is(err, scripted.ErrExhausted) {
			miss = append(miss, "run: "+err.Error())
			rep.Err = err
		}
	}
	rep.Events = rec.Events()
	graph, err := graphOf(st, rep.Events)
	if err != nil {
		return rep, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	rep.Graph = graph
	t, err := st.Task(lastTask)
	if err != nil {
		return rep, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	// The node the node expectations read: the one that stopped the last
	// task, else its last planned node.
	var n state.Node
	node := last.Node
	for _, g := range graph {
		if last.Node == "" && g.Parent == "" && strings.HasPrefix(g.Node, lastTask+".") {
			node = g.Node
		}
	}
	if node != "" {
		if n, err = st.Node(node); err != nil {
			return rep, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	}
	rep.Status, rep.Task = n.Status, t.Status
	if o.Model != nil {
		return rep, nil
	}
	if u := script.unplayed(); u != "" {
		miss = append(miss, u)
	}
	if s.Expect.Graph != nil {
		var got, want []string
		for _, g := range graph {
			got = append(got, g.String())
		}
		for _, g := range s.Expect.Graph {
			want = append(want, g.String())
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			miss = append(miss, fmt.Sprintf("graph:\n      %s\n    want:\n      %s", strings.Join(got, "\n      "), strings.Join(want, "\n      ")))
		}
	}
	miss = append(miss, check(s.Expect, n, t, rep.Events, prompts.systems(), local, tp, *sleeps)...)
	rep.Mismatches = append(rep.Mismatches, miss...)
	return rep, nil
}

// graphOf lists the nodes of every task in the order they started (their
// first NODE event), with their final status and delegating node.
func graphOf(st *state.Memory, events []loop.Event) ([]GraphNode, error) {
	var out []GraphNode
	seen := map[string]bool{}
	for _, e := range events {
		if e.Kind != loop.KindNode || e.Node == "" || seen[e.Node] {
			continue
		}
		seen[e.Node] = true
		n, err := st.Node(e.Node)
		if err != nil {
			return nil, err
		}
		out = append(out, GraphNode{Node: n.ID, Skill: n.SkillKey, Status: string(n.Status), Upstream: n.Upstream, Parent: n.ParentID,
			Target: n.Target, Claimed: n.TargetClaimed})
	}
	return out, nil
}
