package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// Decision is the user's answer to an approval (CONTRACT_SPEC §14.1).
type Decision string

// Decisions.
const (
	Confirm Decision = "CONFIRM"
	Reject  Decision = "REJECT"
	Cancel  Decision = "CANCEL"
)

// AnswerFollowUp resumes a node suspended for FOLLOW_UP with the user's
// answer and runs it on. The answer enters the conversation with its
// question and expected fields, and those fields count as USER sources
// (state.followup.current) for the calls that follow.
func (r *Runner) AnswerFollowUp(ctx context.Context, nodeID, answer string) (Exit, error) {
	f, err := r.store.AnswerFollowUp(nodeID, answer)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: answer: %w: %w", ErrNotSuspended, err)
	}
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	// The question's own call may be open, from a process that died
	// before it was answered: answer it before the user's answer.
	if err := r.closeInterrupted(n); err != nil {
		return Exit{}, err
	}
	text := r.text(txtAnswer, f.Question, answer)
	if len(f.ExpectedFields) > 0 {
		text = r.text(txtAnswerFields, f.Question, strings.Join(f.ExpectedFields, ", "), answer)
	}
	if err := r.store.AppendMessages(nodeID, model.Message{Role: model.RoleUser, Content: text}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Status: abi.SuspendFollowUp, Message: text, Stalls: n.Stalls})
	return r.Run(ctx, nodeID)
}

// Approve resumes a node suspended for APPROVAL with the user's decision
// (CONTRACT_SPEC §14.1):
//
//   - CONFIRM within reconfirm-after: the store checks that the held
//     arguments still have the digest the user was shown, marks the write
//     approved, and the write runs through the whole chain (the WriteGate
//     and the Fingerprint see state.approval.approved and let it through).
//     The model reads the result as the answer to a call of the write, and
//     the node runs on: it must still finish by itself.
//   - CONFIRM of a write whose held arguments no longer have the digest
//     the user was shown: nothing runs. The model reads DEFERRED
//     APPROVAL_ARGS_CHANGED as the answer to a call of the write with the
//     arguments now held, which are held again under their own digest, and
//     must ask for approval again (builtin_node_approval) so that the user
//     sees what would run.
//   - CONFIRM later than reconfirm-after: nothing runs; the node is
//     suspended again and the user asked again.
//   - REJECT: the write does not run; the node and the task are cancelled
//     and Exit.Reply says what was not done.
//   - CANCEL: the task is cancelled.
func (r *Runner) Approve(ctx context.Context, nodeID string, d Decision) (Exit, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: approve: %w", err)
	}
	s := n.Suspension
	if n.Status != state.Suspended || s == nil || s.Kind != abi.SuspendApproval {
		return Exit{}, fmt.Errorf("loop: approve node %s (%s): %w", nodeID, n.Status, ErrNotSuspended)
	}
	now := r.cfg.Now()
	switch d {
	case Confirm:
	case Reject, Cancel:
		return r.refuse(n, d)
	default:
		return Exit{}, fmt.Errorf("loop: approve node %s: %q: %w", nodeID, d, ErrUnknownDecision)
	}
	if now.Sub(s.At) > r.cfg.ReconfirmAfter {
		return r.reconfirm(n, now)
	}
	// A process that died after the node was suspended and before the
	// suspending call was answered left that call open: it is answered
	// first, so that the approved write's call follows a whole turn.
	if err := r.closeInterrupted(n); err != nil {
		return Exit{}, err
	}
	g, err := r.store.Approve(nodeID, now)
	if errors.Is(err, state.ErrDigestMismatch) {
		return r.argsChanged(ctx, n)
	}
	if err != nil {
		return Exit{}, fmt.Errorf("loop: approve node %s: %w", nodeID, err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: g.Tool, Status: abi.SuspendApproval, Message: string(Confirm), Stalls: n.Stalls})
	sk, ok := r.skills[n.SkillKey]
	if !ok {
		return Exit{}, fmt.Errorf("loop: node %s: skill %q: %w", n.ID, n.SkillKey, ErrUnknownSkill)
	}
	n, err = r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	cat, err := r.catalog(n, sk)
	if err != nil {
		return Exit{}, err
	}
	views, err := r.store.Views(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	// The approved write is shown to the model as a call of the write with
	// the held arguments, answered by its result.
	callID := "approved_" + g.CallID
	if err := r.store.AppendMessages(nodeID, model.Message{Role: model.RoleAssistant,
		ToolCalls: []model.ToolCall{{ID: callID, Name: g.Tool, Arguments: string(g.Args)}}}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	cctx, span := startToolSpan(ctx, n, g.Tool, callID)
	res := r.business(cctx, n, sk, cat, callID, g.Tool, g.Args, views)
	spanGuards(span, res.Trace)
	endToolSpan(span, res.Observation, res.Err)
	if res.Err != nil {
		return Exit{}, fmt.Errorf("loop: %s: %w", g.Tool, res.Err)
	}
	if err := r.store.Apply(nodeID, res.Effects); err != nil {
		return Exit{}, fmt.Errorf("loop: %s: %w", g.Tool, err)
	}
	if err := r.store.ClearApproval(nodeID); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	obs := res.Observation
	r.reflect.Store(nodeID, obs.Outcome != abi.OutcomeSuccess)
	cr := callResult{Observation: obs, Evidence: evidenceOf(res.Effects), Response: res.Response}
	sent := r.toolMessage(cr)
	if err := r.store.AppendMessages(nodeID, model.Message{Role: model.RoleTool, ToolCallID: callID, Content: sent}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	c := &Counter{Limit: r.cfg.NoProgressLimit, MaxRounds: r.cfg.MaxRounds, Stalls: n.Stalls, Rounds: n.Rounds}
	for _, e := range policyEvents(g.Tool, callID, res.Trace, n.Stalls) {
		r.emit(n, e)
	}
	c.AfterCall(obs.Outcome, false, false)
	r.emit(n, withGuards(decidedBy(withSent(withCall(toolEvent(Event{Tool: g.Tool, Stalls: c.Stalls, Status: string(state.Running)}, obs), callID, string(g.Args)), sent, cr.Evidence), res.Decider), res.Trace))
	if err := r.store.SetProgress(nodeID, c.Stalls, c.Rounds); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if c.Exhausted() {
		return r.fail(n, c, r.text(txtNoProgress, fmt.Sprint(c.Stalls)))
	}
	return r.Run(ctx, nodeID)
}

// reconfirm answers a CONFIRM that came later than reconfirm-after: the
// node is suspended again, and the user asked again.
func (r *Runner) reconfirm(n state.Node, now time.Time) (Exit, error) {
	s := n.Suspension
	if err := r.store.Resuspend(n.ID, now); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	l := r.cfg.Locale
	o := abi.Deferred(abi.ApprovalExpired, abi.ApprovalExpired.Reason(l, "tool", s.Tool), abi.NextReconfirm.Text(l))
	o.Locale = l
	e := toolEvent(Event{Tool: s.Tool, Stalls: n.Stalls}, o)
	e.Kind, e.Status = KindSuspend, abi.SuspendApproval
	r.emit(n, e)
	n, err := r.store.Node(n.ID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	return exitOf(n), nil
}

// argsChanged answers a CONFIRM whose held write is not the one the user
// saw: the write does not run, the node runs on and the model is told to
// ask for approval again.
func (r *Runner) argsChanged(ctx context.Context, n state.Node) (Exit, error) {
	g := n.Gated
	if g == nil {
		return Exit{}, fmt.Errorf("loop: approve node %s: %w", n.ID, state.ErrNotGated)
	}
	// Held again under the digest of what is held now: the next approval
	// shows the user these arguments.
	if err := r.store.Gate(n.ID, g.Tool, g.CallID, g.Args); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.SetNodeStatus(n.ID, state.Running, ""); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: g.Tool, Status: abi.SuspendApproval, Message: string(Confirm), Stalls: n.Stalls})
	callID := fmt.Sprintf("changed_%s_%d", g.CallID, n.Rounds)
	if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleAssistant,
		ToolCalls: []model.ToolCall{{ID: callID, Name: g.Tool, Arguments: string(g.Args)}}}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	l := r.cfg.Locale
	o := abi.Deferred(abi.ApprovalArgsChanged, abi.ApprovalArgsChanged.Reason(l, "tool", g.Tool), abi.NextReconfirm.Text(l))
	o.Locale = l
	sent := r.toolMessage(callResult{Observation: o})
	if err := r.store.AppendMessages(n.ID, model.Message{Role: model.RoleTool, ToolCallID: callID, Content: sent}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	// DEFERRED neither counts nor resets the no-progress counter.
	r.emit(n, withSent(withCall(toolEvent(Event{Tool: g.Tool, Stalls: n.Stalls, Status: string(state.Running)}, o), callID, string(g.Args)), sent, nil))
	return r.Run(ctx, n.ID)
}

// refuse ends a node whose approval the user rejected, or a task the user
// cancelled: the held write does not run.
func (r *Runner) refuse(n state.Node, d Decision) (Exit, error) {
	s := n.Suspension
	id := txtRejected
	if d == Cancel {
		id = txtCancelled
	}
	reply := r.text(id, s.Tool, s.Question)
	if err := r.store.ClearApproval(n.ID); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.SetNodeStatus(n.ID, state.Cancelled, reply); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.SetTaskStatus(n.TaskID, state.Cancelled); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: s.Tool, Status: abi.SuspendApproval, Message: string(d), Stalls: n.Stalls})
	r.emit(n, Event{Kind: KindNode, Status: string(state.Cancelled), Message: reply, Stalls: n.Stalls})
	r.emit(n, Event{Kind: KindTask, Status: string(state.Cancelled), Message: reply})
	return Exit{Status: state.Cancelled, Reason: reply, Reply: reply}, nil
}
