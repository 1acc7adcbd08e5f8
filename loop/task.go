package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// TaskInput is one user turn to run as a task.
type TaskInput struct {
	// ID names the task; its nodes are "<ID>.<plan node id>".
	ID        string
	Objective string
	// Skills are the candidate skills the user's intent selected, in order
	// of preference; empty means every skill of the runner.
	Skills []string
	// Platform is the login identity of the round (CONTRACT_SPEC §11):
	// open platform fields (contract.OpenPlatformFields) and their JSON
	// values, read by platform.* in every node of the task, delegated
	// pre-nodes included. A field that is not open is refused
	// (ErrPlatformField); nil leaves the store's.
	Platform map[string]json.RawMessage
}

// TaskExit is how a task stopped.
type TaskExit struct {
	// Status is DONE, FAILED, CANCELLED, or SUSPENDED while a node waits
	// for the user.
	Status state.Status
	Plan   Plan
	// Node is the node that suspended, failed or cancelled the task.
	Node       string
	Suspension *state.Suspension
	// Output joins the outputs of the task's finished nodes; Reason is why
	// it failed or was cancelled; Reply what the user is told then.
	Output string
	Reason string
	Reply  string
}

// graph is a task's plan as it runs: which node waits for which delegated
// pre-node.
type graph struct {
	id, objective string
	plan          Plan
	waiting       map[string]string // delegating node → delegated pre-node
	platform      map[string]json.RawMessage
}

func (g *graph) nodeID(planID string) string { return g.id + "." + planID }

// savedGraph is a graph as the store keeps it (state.Task.Graph).
type savedGraph struct {
	Objective string            `json:"objective"`
	Nodes     []PlanNode        `json:"nodes"`
	Source    PlanSource        `json:"source,omitempty"`
	Problem   string            `json:"problem,omitempty"`
	Waiting   map[string]string `json:"waiting,omitempty"`
	// Platform is the login identity the task's nodes read (TaskInput).
	Platform map[string]json.RawMessage `json:"platform,omitempty"`
}

// save writes the graph to the store, so that the task can be run on by a
// runner that did not plan it (after a restart, or on another instance).
func (r *Runner) save(g *graph) error {
	b, err := json.Marshal(savedGraph{Objective: g.objective, Nodes: g.plan.Nodes, Source: g.plan.Source,
		Problem: g.plan.Problem, Waiting: g.waiting, Platform: g.platform})
	if err != nil {
		return fmt.Errorf("loop: task %s: graph: %w", g.id, err)
	}
	if err := r.store.SetTaskGraph(g.id, b); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	return nil
}

// loadGraph returns the task's graph: the runner's own, else the one the
// store keeps.
func (r *Runner) loadGraph(taskID string) (*graph, error) {
	r.graphs.mu.Lock()
	defer r.graphs.mu.Unlock()
	if g := r.graphs.m[taskID]; g != nil {
		return g, nil
	}
	t, err := r.store.Task(taskID)
	if errors.Is(err, state.ErrNotFound) || (err == nil && len(t.Graph) == 0) {
		return nil, fmt.Errorf("loop: resume task %s: %w", taskID, ErrUnknownTask)
	}
	if err != nil {
		return nil, fmt.Errorf("loop: resume task %s: %w", taskID, err)
	}
	var sg savedGraph
	if err := json.Unmarshal(t.Graph, &sg); err != nil {
		return nil, fmt.Errorf("loop: resume task %s: stored graph: %w", taskID, err)
	}
	for _, pn := range sg.Nodes {
		if _, ok := r.skills[pn.SkillKey]; !ok {
			return nil, fmt.Errorf("loop: resume task %s: node %s: skill %q: %w", taskID, pn.ID, pn.SkillKey, ErrUnknownSkill)
		}
	}
	if sg.Waiting == nil {
		sg.Waiting = map[string]string{}
	}
	g := &graph{id: taskID, objective: sg.Objective, plan: Plan{Nodes: sg.Nodes, Source: sg.Source, Problem: sg.Problem}, waiting: sg.Waiting,
		platform: sg.Platform}
	if r.graphs.m == nil {
		r.graphs.m = map[string]*graph{}
	}
	r.graphs.m[taskID] = g
	return g, nil
}

type graphs struct {
	mu sync.Mutex
	m  map[string]*graph
}

// ErrUnknownTask: a resume names a task this runner did not start.
var ErrUnknownTask = errors.New("unknown task")

// RunTask plans a task graph for the objective and runs its nodes in
// order (CONTRACT_SPEC §3, §7, §10.1, §15): each node is created when it
// starts, with its inputs bound, its completion target from the plan and
// its upstream nodes' evidence; a provider pre-node whose shared outputs
// already exist is SKIPPED; a node that delegates waits for its
// pre-node. The task stops at the first node that suspends (resume that
// node, then call ResumeTask), fails or is cancelled.
func (r *Runner) RunTask(ctx context.Context, in TaskInput) (exit TaskExit, err error) {
	ctx, span := r.startTaskSpan(ctx, in.ID)
	defer func() { EndTaskSpan(span, exit, err) }()
	if err := checkPlatform(in.ID, in.Platform); err != nil {
		return TaskExit{}, err
	}
	cands := slices.DeleteFunc(slices.Clone(in.Skills), func(k string) bool { _, ok := r.skills[k]; return !ok })
	if len(in.Skills) == 0 {
		cands = slices.Clone(r.order)
	}
	if len(cands) == 0 {
		return TaskExit{}, fmt.Errorf("loop: task %s: no candidate skill: %w", in.ID, ErrUnknownSkill)
	}
	if err := r.store.CreateTask(state.Task{ID: in.ID, Objective: in.Objective}); err != nil {
		return TaskExit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.AddUserMessage(in.Objective); err != nil {
		return TaskExit{}, fmt.Errorf("loop: %w", err)
	}
	return r.planAndDrive(ctx, in, cands)
}

// RestartTask runs on a task a process left interrupted, however far it
// got: a task the store does not know (the process died before it was
// created) runs as new; one created but never planned (it died before the
// graph was saved, so no node exists and nothing was called) is planned
// and run now, with in.Platform as its login identity; any other is
// resumed (ResumeTask) with the identity it was started with.
func (r *Runner) RestartTask(ctx context.Context, in TaskInput) (exit TaskExit, err error) {
	t, err := r.store.Task(in.ID)
	if errors.Is(err, state.ErrNotFound) {
		return r.RunTask(ctx, in)
	}
	if err != nil {
		return TaskExit{}, fmt.Errorf("loop: restart task %s: %w", in.ID, err)
	}
	if len(t.Graph) > 0 {
		return r.ResumeTask(ctx, in.ID)
	}
	ctx, span := r.startTaskSpan(ctx, in.ID)
	defer func() { EndTaskSpan(span, exit, err) }()
	if err := checkPlatform(in.ID, in.Platform); err != nil {
		return TaskExit{}, err
	}
	cands := slices.DeleteFunc(slices.Clone(in.Skills), func(k string) bool { _, ok := r.skills[k]; return !ok })
	if len(in.Skills) == 0 {
		cands = slices.Clone(r.order)
	}
	if len(cands) == 0 {
		return TaskExit{}, fmt.Errorf("loop: task %s: no candidate skill: %w", in.ID, ErrUnknownSkill)
	}
	if in.Objective == "" {
		in.Objective = t.Objective
	}
	return r.planAndDrive(ctx, in, cands)
}

// planAndDrive plans a created task, saves its graph and runs it.
func (r *Runner) planAndDrive(ctx context.Context, in TaskInput, cands []string) (TaskExit, error) {
	p, err := r.plan(ctx, in.Objective, cands)
	var pe *ProviderUnavailableError
	if errors.As(err, &pe) {
		return r.planFailed(in.ID, p, pe)
	}
	if err != nil {
		return TaskExit{}, err
	}
	g := &graph{id: in.ID, objective: in.Objective, plan: p, waiting: map[string]string{}, platform: in.Platform}
	if err := r.save(g); err != nil {
		return TaskExit{}, err
	}
	r.graphs.mu.Lock()
	if r.graphs.m == nil {
		r.graphs.m = map[string]*graph{}
	}
	r.graphs.m[in.ID] = g
	r.graphs.mu.Unlock()
	var keys []string
	for _, n := range p.Nodes {
		k := n.ID + ":" + n.SkillKey
		if n.Target != "" {
			k += ">" + n.Target
		}
		keys = append(keys, k)
	}
	msg := string(p.Source) + " " + strings.Join(keys, " ")
	if p.Problem != "" {
		msg += " (" + p.Problem + ")"
	}
	r.emitTask(in.ID, Event{Kind: KindTask, Status: "PLANNED", Message: msg})
	return r.drive(ctx, g)
}

// planFailed ends a task whose plan failed for a provider that is no skill
// of the agent (CONTRACT_SPEC §16): the task is FAILED before any node
// runs, and its TASK event carries PROVIDER_UNAVAILABLE.
func (r *Runner) planFailed(taskID string, p Plan, pe *ProviderUnavailableError) (TaskExit, error) {
	l := r.cfg.Locale
	reason := abi.ProviderUnavailable.Reason(l, "skill", pe.Provider) + r.text(txtProviderOf, pe.Skill, pe.Input)
	if err := r.store.SetTaskStatus(taskID, state.Failed); err != nil {
		return TaskExit{}, fmt.Errorf("loop: %w", err)
	}
	e := Event{Kind: KindTask, Status: string(state.Failed), Message: reason, Level: "WARN"}
	if i, ok := abi.ProviderUnavailable.Info(); ok {
		e.Code, e.Name, e.Category = i.Wire, string(i.Code), string(i.Category)
	}
	r.emitTask(taskID, e)
	return TaskExit{Status: state.Failed, Plan: p, Reason: reason, Reply: reason}, nil
}

// ResumeTask runs a task on after the node that suspended it was resumed
// (AnswerFollowUp, Approve, AnswerVerify).
func (r *Runner) ResumeTask(ctx context.Context, taskID string) (exit TaskExit, err error) {
	ctx, span := r.startTaskSpan(ctx, taskID)
	defer func() { EndTaskSpan(span, exit, err) }()
	g, err := r.loadGraph(taskID)
	if err != nil {
		return TaskExit{}, err
	}
	return r.drive(ctx, g)
}

func (r *Runner) emitTask(taskID string, e Event) {
	r.emit(state.Node{TaskID: taskID}, e)
}

// drive runs the graph's nodes in plan order until one stops the task.
func (r *Runner) drive(ctx context.Context, g *graph) (TaskExit, error) {
	out := TaskExit{Plan: g.plan}
	var outputs []string
	for _, pn := range g.plan.Nodes {
		id := g.nodeID(pn.ID)
		if _, err := r.store.Node(id); errors.Is(err, state.ErrNotFound) {
			if err := r.startNode(g, pn); err != nil {
				return TaskExit{}, err
			}
		} else if err != nil {
			return TaskExit{}, fmt.Errorf("loop: %w", err)
		}
		n, err := r.runNode(ctx, g, id)
		if err != nil {
			return TaskExit{}, err
		}
		switch n.Status {
		case state.Done:
			outputs = append(outputs, n.Output)
			continue
		case state.Skipped:
			continue
		case state.Suspended:
			out.Status, out.Node, out.Suspension = state.Suspended, n.ID, n.Suspension
			if err := r.store.SetTaskStatus(g.id, state.Suspended); err != nil {
				return TaskExit{}, fmt.Errorf("loop: %w", err)
			}
			r.emitTask(g.id, Event{Kind: KindTask, Status: string(state.Suspended), Message: n.Suspension.Question})
			return out, nil
		case state.Cancelled:
			out.Status, out.Node, out.Reason, out.Reply = state.Cancelled, n.ID, n.Reason, n.Reason
		default:
			out.Status, out.Node, out.Reason = state.Failed, n.ID, n.Reason
		}
		if err := r.store.SetTaskStatus(g.id, out.Status); err != nil {
			return TaskExit{}, fmt.Errorf("loop: %w", err)
		}
		if out.Status == state.Failed {
			r.emitTask(g.id, Event{Kind: KindTask, Status: string(out.Status), Message: out.Reason, Level: "WARN"})
		} else if t, _ := r.store.Task(g.id); t.Status != state.Cancelled {
			r.emitTask(g.id, Event{Kind: KindTask, Status: string(out.Status), Message: out.Reason})
		}
		return out, nil
	}
	out.Status, out.Output = state.Done, strings.Join(outputs, "\n")
	if err := r.store.SetTaskStatus(g.id, state.Done); err != nil {
		return TaskExit{}, fmt.Errorf("loop: %w", err)
	}
	r.emitTask(g.id, Event{Kind: KindTask, Status: string(state.Done), Message: out.Output})
	return out, nil
}

// startNode creates a planned node when it starts: inputs bound, target
// from the plan, upstream evidence, delegatable skills; a provider
// pre-node whose shared outputs all exist is created SKIPPED.
func (r *Runner) startNode(g *graph, pn PlanNode) error {
	sk := r.skills[pn.SkillKey]
	c := sk.Skill.Contract
	var upstream []string
	for i := len(pn.DependsOn) - 1; i >= 0; i-- {
		upstream = append(upstream, g.nodeID(pn.DependsOn[i]))
	}
	inputs, err := r.bindInputs(g.id, c, upstream, nil)
	if err != nil {
		return err
	}
	dependents := slices.ContainsFunc(g.plan.Nodes, func(o PlanNode) bool { return slices.Contains(o.DependsOn, pn.ID) })
	n := r.newNode(g.nodeID(pn.ID), g.id, sk, 0, "")
	n.Upstream, n.Inputs, n.HasDependents, n.Target = upstream, inputs, dependents, pn.Target
	n.Platform = g.platform
	skip := false
	if pn.Provider {
		skip, err = r.sharedOutputsExist(g.id, c)
		if err != nil {
			return err
		}
	}
	objective := g.objective
	if o := strings.TrimSpace(pn.Objective); o != "" && o != g.objective {
		objective = r.text(txtNodeObjective, g.objective, o)
	}
	if skip {
		n.Status, n.Reason = state.Skipped, "shared outputs exist"
	}
	if err := r.store.CreateNode(n); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleUser, Content: objective}); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	status := state.Running
	if skip {
		status = state.Skipped
	}
	r.emit(n, Event{Kind: KindNode, Status: string(status), Message: objective})
	return nil
}

// newNode is a node of a skill with the runner's view of the agent.
func (r *Runner) newNode(id, taskID string, sk Skill, depth int, parent string) state.Node {
	key := sk.Skill.Profile.SkillKey
	var delegatable []string
	for _, k := range r.order {
		c := r.skills[k].Skill.Contract
		if k != key && c.Delegatable && !slices.ContainsFunc(c.ToolNames(), func(t string) bool { return c.Tool(t).IsWrite() }) {
			delegatable = append(delegatable, k)
		}
	}
	return state.Node{ID: id, TaskID: taskID, SkillKey: key, Depth: depth, ParentID: parent,
		Contract: []byte(sk.Skill.Profile.SkillContract), ToolNames: slices.Clone(sk.Skill.ToolNames),
		Skills: slices.Clone(r.order), Delegatable: delegatable, DelegateMaxDepth: r.cfg.DelegateMaxDepth}
}

// sharedOutputsExist reports whether a skill declares shared outputs and
// every one of them already has a value (§7: the pre-node is SKIPPED).
func (r *Runner) sharedOutputsExist(taskID string, c *contract.Contract) (bool, error) {
	shared, err := r.store.Shared(taskID)
	if err != nil {
		return false, fmt.Errorf("loop: %w", err)
	}
	session := r.store.SessionValues()
	declared := 0
	for _, k := range c.OutputNames() {
		var ok bool
		switch c.Outputs[k].Share {
		case contract.ShareTask:
			_, ok = shared[k]
		case contract.ShareSession:
			_, ok = session[k]
		default:
			continue
		}
		declared++
		if !ok {
			return false, nil
		}
	}
	return declared > 0, nil
}

// runNode runs a node, running first each pre-node it delegates to
// (§15): the delegated skill runs as a child node, and the delegating node
// then reads the result as a message and goes on. A failed pre-node does
// not fail the task. It returns the node that stopped: the node itself
// when it ended, or a pre-node that suspended.
func (r *Runner) runNode(ctx context.Context, g *graph, id string) (state.Node, error) {
	for {
		if child, ok := g.waiting[id]; ok {
			cn, err := r.runNode(ctx, g, child)
			if err != nil {
				return state.Node{}, err
			}
			if !cn.Status.Ended() {
				return cn, nil
			}
			delete(g.waiting, id)
			if err := r.save(g); err != nil {
				return state.Node{}, err
			}
			text := r.text(txtDelegationDone, cn.SkillKey, cn.Output)
			if cn.Status != state.Done {
				text = r.text(txtDelegationFailed, cn.SkillKey, string(cn.Status), cn.Reason)
			}
			if err := r.store.AppendMessages(id, model.Message{Role: model.RoleUser, Content: text}); err != nil {
				return state.Node{}, fmt.Errorf("loop: %w", err)
			}
			parent, err := r.store.Node(id)
			if err != nil {
				return state.Node{}, fmt.Errorf("loop: %w", err)
			}
			r.emit(parent, Event{Kind: KindResume, Status: "DELEGATION", Message: text, Stalls: parent.Stalls})
		}
		exit, err := r.Run(ctx, id)
		if err != nil {
			return state.Node{}, err
		}
		n, err := r.store.Node(id)
		if err != nil {
			return state.Node{}, fmt.Errorf("loop: %w", err)
		}
		if exit.Delegation == nil || n.Status != state.Running {
			return n, nil
		}
		d := exit.Delegation
		sk, ok := r.skills[d.SkillKey]
		if !ok {
			return state.Node{}, fmt.Errorf("loop: node %s delegates %q: %w", id, d.SkillKey, ErrUnknownSkill)
		}
		child := r.newNode(fmt.Sprintf("%s.d%d", id, len(n.Delegations)), n.TaskID, sk, n.Depth+1, id)
		child.Platform = n.Platform
		if child.Inputs, err = r.bindInputs(n.TaskID, sk.Skill.Contract, nil, nil); err != nil {
			return state.Node{}, err
		}
		if err := r.store.CreateNode(child); err != nil {
			return state.Node{}, fmt.Errorf("loop: %w", err)
		}
		objective := d.Objective
		if strings.TrimSpace(objective) == "" {
			objective = sk.Skill.Profile.ShortDesc()
		}
		if err := r.store.AppendMessages(child.ID, model.Message{Role: model.RoleUser, Content: objective}); err != nil {
			return state.Node{}, fmt.Errorf("loop: %w", err)
		}
		r.emit(child, Event{Kind: KindNode, Status: string(state.Running), Message: objective})
		g.waiting[id] = child.ID
		if err := r.save(g); err != nil {
			return state.Node{}, err
		}
	}
}

// StoppedTask is where a task's nodes stopped it, read from the store
// without running anything, for a process that died before it recorded
// the task's status: the end its nodes came to (as CompleteTask), or the
// node that waits for the user (SUSPENDED). stopped is false while a node
// still runs or was never started; the task is then resumed.
func (r *Runner) StoppedTask(taskID string) (exit TaskExit, stopped bool, err error) {
	g, err := r.loadGraph(taskID)
	if err != nil {
		return TaskExit{}, false, err
	}
	exit, stopped, err = r.endOf(g)
	if err != nil || !stopped {
		return TaskExit{}, false, err
	}
	if exit.Status != state.Suspended {
		return r.CompleteTask(taskID)
	}
	t, err := r.store.Task(taskID)
	if err != nil {
		return TaskExit{}, false, fmt.Errorf("loop: task %s: %w", taskID, err)
	}
	if t.Status != state.Suspended {
		if err := r.store.SetTaskStatus(taskID, state.Suspended); err != nil {
			return TaskExit{}, false, fmt.Errorf("loop: task %s: %w", taskID, err)
		}
		r.emitTask(taskID, Event{Kind: KindTask, Status: string(state.Suspended), Message: exit.Suspension.Question})
	}
	return exit, true, nil
}

// CompleteTask records the end of a task whose nodes have ended but whose
// own status was never saved: a process that died between a node's end
// and the task's leaves such a task, and nothing else would ever end it.
// It walks the task's graph in plan order as drive does, without running
// anything: every node DONE or SKIPPED makes the task DONE, the first
// FAILED or CANCELLED node ends it so. ended is false when a node still
// runs, waits, delegates or was never started; the task is then left as
// it is. A task whose status was already saved is returned as it ended,
// and its task event is not emitted again.
func (r *Runner) CompleteTask(taskID string) (exit TaskExit, ended bool, err error) {
	g, err := r.loadGraph(taskID)
	if err != nil {
		return TaskExit{}, false, err
	}
	exit, ended, err = r.endOf(g)
	if err != nil || !ended || exit.Status == state.Suspended {
		return TaskExit{}, false, err
	}
	t, err := r.store.Task(taskID)
	if err != nil {
		return TaskExit{}, false, fmt.Errorf("loop: complete task %s: %w", taskID, err)
	}
	if t.Status == exit.Status {
		return exit, true, nil
	}
	if err := r.store.SetTaskStatus(taskID, exit.Status); err != nil {
		return TaskExit{}, false, fmt.Errorf("loop: complete task %s: %w", taskID, err)
	}
	switch exit.Status {
	case state.Done:
		r.emitTask(taskID, Event{Kind: KindTask, Status: string(state.Done), Message: exit.Output})
	case state.Failed:
		r.emitTask(taskID, Event{Kind: KindTask, Status: string(state.Failed), Message: exit.Reason, Level: "WARN"})
	default:
		r.emitTask(taskID, Event{Kind: KindTask, Status: string(exit.Status), Message: exit.Reason})
	}
	return exit, true, nil
}

// endOf is where the graph's task stopped, read from its nodes in plan
// order as drive would find them: ended, or SUSPENDED at a node (a
// delegated pre-node included) that waits for the user; stopped is false
// while a node runs or was never started.
func (r *Runner) endOf(g *graph) (TaskExit, bool, error) {
	out := TaskExit{Plan: g.plan}
	var outputs []string
	for _, pn := range g.plan.Nodes {
		id := g.nodeID(pn.ID)
		if child, ok := g.waiting[id]; ok {
			// The node waits for its pre-node: the task stops only
			// where the pre-node waits for the user.
			id = child
		}
		n, err := r.store.Node(id)
		if errors.Is(err, state.ErrNotFound) {
			return TaskExit{}, false, nil
		}
		if err != nil {
			return TaskExit{}, false, fmt.Errorf("loop: task %s: %w", g.id, err)
		}
		if id != g.nodeID(pn.ID) && n.Status != state.Suspended {
			// A pre-node that ended, or runs: the delegating node
			// goes on.
			return TaskExit{}, false, nil
		}
		switch n.Status {
		case state.Done:
			outputs = append(outputs, n.Output)
			continue
		case state.Skipped:
			continue
		case state.Cancelled:
			out.Status, out.Node, out.Reason, out.Reply = state.Cancelled, n.ID, n.Reason, n.Reason
		case state.Failed:
			out.Status, out.Node, out.Reason = state.Failed, n.ID, n.Reason
		case state.Suspended:
			if n.Suspension == nil {
				return TaskExit{}, false, nil
			}
			out.Status, out.Node, out.Suspension = state.Suspended, n.ID, n.Suspension
		default:
			return TaskExit{}, false, nil
		}
		return out, true, nil
	}
	out.Status, out.Output = state.Done, strings.Join(outputs, "\n")
	return out, true, nil
}

// checkPlatform refuses a login identity with a field that is not an open
// platform field (CONTRACT_SPEC §11: the hidden ones, passportId … , never
// reach a node) or a value that is not JSON.
func checkPlatform(taskID string, p map[string]json.RawMessage) error {
	for k, v := range p {
		if !contract.IsPlatformField(k) {
			return fmt.Errorf("loop: task %s: platform field %q (open: %s): %w", taskID, k, strings.Join(contract.OpenPlatformFields, ", "), ErrPlatformField)
		}
		if !json.Valid(v) {
			return fmt.Errorf("loop: task %s: platform field %s: the value is not JSON: %w", taskID, k, ErrPlatformField)
		}
	}
	return nil
}
