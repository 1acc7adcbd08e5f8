package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// Recover marks the writes a previous process left STARTED as
// UNKNOWN_PRE_CALL (CONTRACT_SPEC §14.3): call it once when a runner
// takes over a store that outlived its process. The write is never issued
// again before it is verified: each node that was running such a write is
// suspended for VERIFY, its task with it, and a later run (VerifyNode,
// or AnswerVerify with the user's answer) settles it.
func (r *Runner) Recover() ([]abi.LedgerEntry, error) {
	l, err := r.store.RecoverWrites()
	if err != nil {
		return nil, fmt.Errorf("loop: recover: %w", err)
	}
	for _, e := range l {
		n, err := r.store.Node(e.NodeID)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return l, fmt.Errorf("loop: recover: %w", err)
		}
		if n.Status != state.Running {
			continue
		}
		if err := r.closeInterrupted(n); err != nil {
			return l, fmt.Errorf("loop: recover: %w", err)
		}
		if _, err := r.askVerify(n, e); err != nil {
			return l, fmt.Errorf("loop: recover: %w", err)
		}
		if err := r.store.SetTaskStatus(n.TaskID, state.Suspended); err != nil {
			return l, fmt.Errorf("loop: recover: %w", err)
		}
	}
	return l, nil
}

// closeInterrupted answers the tool calls of the node's last assistant
// turn that have no tool message: the process stopped during them. The
// conversation must pair every call with an answer before the model reads
// it again; the answer says the outcome is unknown.
func (r *Runner) closeInterrupted(n state.Node) error {
	msgs, err := r.store.Messages(n.ID)
	if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	last := -1
	for i, m := range msgs {
		if m.Role == model.RoleAssistant && len(m.ToolCalls) > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []model.Message
	for _, tc := range msgs[last].ToolCalls {
		if !answered[tc.ID] {
			out = append(out, model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Content: r.toolMessage(callResult{Observation: r.interrupted(n, tc.Name)})})
		}
	}
	if len(out) == 0 {
		return nil
	}
	if err := r.store.AppendMessages(n.ID, out...); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	return nil
}

// interrupted is the observation of a call the process stopped during:
// FAILED, its outcome unknown. A write is verified before anything else
// (WRITE_PENDING_VERIFY); a read may be called again (TOOL_IO_ERROR).
func (r *Runner) interrupted(n state.Node, tool string) abi.Observation {
	l := r.cfg.Locale
	detail := r.text(txtInterruptedDetail)
	o := abi.Failed(abi.ToolIOError, abi.ToolIOError.Reason(l, "tool", tool, "detail", detail), abi.NextRetryLater.Text(l))
	if sk, ok := r.skills[n.SkillKey]; ok && sk.Skill.Contract.Tool(tool).IsWrite() {
		o = abi.Failed(abi.WritePendingVerify, abi.WritePendingVerify.Reason(l, "tool", tool)+"："+detail, abi.NextWaitVerify.Text(l))
		if l == abi.LocaleEN {
			o = abi.Failed(abi.WritePendingVerify, abi.WritePendingVerify.Reason(l, "tool", tool)+": "+detail, abi.NextWaitVerify.Text(l))
		}
	}
	o.Locale = l
	return o
}

// askVerify suspends a running node for VERIFY of an uncertain write: the
// user is asked whether it took effect.
func (r *Runner) askVerify(n state.Node, e abi.LedgerEntry) (state.Node, error) {
	orig := r.originalArgs(n, e.CallID)
	q := r.text(txtVerifyAsk, e.Tool, string(orig))
	eff, err := effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendVerify, Question: q, Tool: e.Tool, Args: orig, ArgsDigest: e.ArgsDigest})
	if err != nil {
		return n, err
	}
	if err := r.store.Apply(n.ID, []abi.Effect{eff}); err != nil {
		return n, fmt.Errorf("loop: %w", err)
	}
	if n, err = r.store.Node(n.ID); err != nil {
		return n, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindSuspend, Tool: e.Tool, Status: abi.SuspendVerify, Message: q, Stalls: n.Stalls})
	return n, nil
}

// VerifyNode settles the write a node suspended for VERIFY is waiting on
// with the skill's verify tool (CONTRACT_SPEC §14.3) instead of the user's
// answer, then runs the node on. A write whose tool has no verify
// configured is refused with ErrNoVerifyTool and the node stays as it is;
// a verify call that fails suspends the node for VERIFY again. A verify
// tool that does not find the write before the write's call could have
// finished (the ledger entry's start plus the write tool's call timeout,
// by Config.Now) settles nothing: the answer is a *VerifyTooEarlyError
// (ErrVerifyTooEarly) saying when to ask again, and the node stays as it
// is. Finding it counts at once.
func (r *Runner) VerifyNode(ctx context.Context, nodeID string) (Exit, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: verify: %w", err)
	}
	s := n.Suspension
	if n.Status != state.Suspended || s == nil || s.Kind != abi.SuspendVerify {
		return Exit{}, fmt.Errorf("loop: verify node %s (%s): %w", nodeID, n.Status, ErrNotSuspended)
	}
	sk, ok := r.skills[n.SkillKey]
	if !ok {
		return Exit{}, fmt.Errorf("loop: node %s: skill %q: %w", n.ID, n.SkillKey, ErrUnknownSkill)
	}
	wt := sk.Skill.Contract.Tool(s.Tool)
	if wt == nil || wt.Verify == nil || !slices.Contains(sk.Skill.ToolNames, wt.Verify.Tool) || sk.Chain.Invoker == nil {
		return Exit{}, fmt.Errorf("loop: verify node %s: write %s: %w", nodeID, s.Tool, ErrNoVerifyTool)
	}
	e, err := r.waitingWrite(n)
	if err != nil {
		return Exit{}, err
	}
	// The verify tool is called before the node runs: a negative answer
	// while the write's call could still be under way leaves the node
	// waiting as it is.
	vr, answered := r.runVerify(ctx, n, sk, e)
	if answered && !vr.took() {
		if err := r.tooEarly(n, sk, e, vr.tool); err != nil {
			return Exit{}, err
		}
	}
	if err := r.store.SetNodeStatus(nodeID, state.Running, ""); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: s.Tool, Status: abi.SuspendVerify, Message: wt.Verify.Tool, Stalls: n.Stalls})
	if !answered {
		// The verify call failed: the user is asked again.
		if n, err = r.askVerify(n, e); err != nil {
			return Exit{}, err
		}
		return exitOf(n), nil
	}
	if err := r.recordVerify(n, e, vr); err != nil {
		return Exit{}, err
	}
	return r.Run(ctx, nodeID)
}

// waitingWrite returns the uncertain write a node suspended for VERIFY
// waits on.
func (r *Runner) waitingWrite(n state.Node) (abi.LedgerEntry, error) {
	s := n.Suspension
	open, err := r.uncertain(n)
	if err != nil {
		return abi.LedgerEntry{}, err
	}
	i := slices.IndexFunc(open, func(e abi.LedgerEntry) bool { return e.Tool == s.Tool && e.ArgsDigest == s.ArgsDigest })
	if i < 0 {
		return abi.LedgerEntry{}, fmt.Errorf("loop: verify node %s: write %s: %w", n.ID, s.Tool, state.ErrNotUncertain)
	}
	return open[i], nil
}

// VerifyTooEarlyError is the answer to a negative verification of a write
// (the verify tool did not find it, or the user said it did not take)
// that came before the write's call could have finished: before the
// ledger entry's start plus the write tool's call timeout. The tool server
// may still be on the call a dead process sent, so "not there" proves
// nothing yet. Nothing is settled and the node keeps waiting for VERIFY;
// ask again after Until. It wraps ErrVerifyTooEarly.
type VerifyTooEarlyError struct {
	Tool  string
	Until time.Time
	// RetryAfter is Until less the runner's clock at the answer.
	RetryAfter time.Duration
	// Observation is DEFERRED WRITE_VERIFY_TOO_EARLY, in the runner's
	// locale.
	Observation abi.Observation
}

func (e *VerifyTooEarlyError) Error() string {
	return fmt.Sprintf("loop: verify write %s: %s (until %s)", e.Tool, ErrVerifyTooEarly, e.Until.UTC().Format(time.RFC3339Nano))
}

func (e *VerifyTooEarlyError) Unwrap() error { return ErrVerifyTooEarly }

// writeDeadline is when the call of write e could have finished at the
// latest: its start plus the write tool's call timeout (the contract's
// timeoutMs, else the invoker's). ok is false for an entry without a
// recorded start, and for one that is not UNKNOWN_PRE_CALL: a write that
// came back UNKNOWN was waited for by this process until it timed out or
// failed, while one a dead process left was not waited for at all.
func (r *Runner) writeDeadline(sk Skill, e abi.LedgerEntry) (time.Time, bool) {
	start, err := time.Parse(time.RFC3339Nano, e.StartedAt)
	if err != nil || e.State != abi.LedgerUnknownPreCall {
		return time.Time{}, false
	}
	inv := sk.Chain.Invoker
	if inv == nil {
		inv = &chain.Invoker{}
	}
	return start.Add(inv.Timeout(e.Tool, sk.Skill.Contract.Tool(e.Tool))), true
}

// tooEarly returns a *VerifyTooEarlyError when a negative verification of
// write e (by the verify tool by, or the user when by is "") comes before
// its call could have finished, and emits its observation; nil otherwise.
func (r *Runner) tooEarly(n state.Node, sk Skill, e abi.LedgerEntry, by string) error {
	until, ok := r.writeDeadline(sk, e)
	now := r.cfg.Now()
	if !ok || !now.Before(until) {
		return nil
	}
	wait := until.Sub(now)
	l := r.cfg.Locale
	// Whole seconds, rounded up: asking again at the time shown, or after
	// the seconds said, is never too early.
	up := until.Truncate(time.Second)
	if up.Before(until) {
		up = up.Add(time.Second)
	}
	at := up.UTC().Format(time.RFC3339)
	secs := strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10)
	o := abi.Deferred(abi.WriteVerifyTooEarly, abi.WriteVerifyTooEarly.Reason(l, "tool", e.Tool, "until", at),
		abi.NextVerifyLater.Text(l, "seconds", secs, "until", at))
	o.Locale = l
	tool := by
	if tool == "" {
		tool = e.Tool
	}
	r.emit(n, toolEvent(Event{Tool: tool, Status: abi.SuspendVerify, Stalls: n.Stalls}, o))
	return &VerifyTooEarlyError{Tool: e.Tool, Until: until, RetryAfter: wait, Observation: o}
}

// verifyRun is a call of a write's verify tool that answered, and how the
// chain's judge (the ResponseContract guard) read its response: judged is
// SUCCESS (the write took effect) or the judge's FAILED observation (it
// did not).
type verifyRun struct {
	tool   string
	args   json.RawMessage
	inv    chain.Invoked
	judged abi.Observation
}

// took reports whether the verify found the write done.
func (vr verifyRun) took() bool { return vr.judged.Outcome == abi.OutcomeSuccess }

// runVerify calls the verify tool of write e through the skill's invoker
// with verify.args, and has the response judged by the skill chain's judge
// (chain.Chain.Judge: the ResponseContract guard, which reads the verify
// tool's own success, §6.4), as every other response is. answered is false
// when the write has no usable verify (none configured, its arguments do
// not build), the verify call failed, or the judge gave no verdict (its
// plugin failed, or it neither passed nor failed the call); a failure is
// emitted.
func (r *Runner) runVerify(ctx context.Context, n state.Node, sk Skill, e abi.LedgerEntry) (verifyRun, bool) {
	wt := sk.Skill.Contract.Tool(e.Tool)
	if wt == nil || wt.Verify == nil || !slices.Contains(sk.Skill.ToolNames, wt.Verify.Tool) || sk.Chain.Invoker == nil {
		return verifyRun{}, false
	}
	v := wt.Verify
	args, err := v.BuildArgs(r.originalArgs(n, e.CallID))
	if err != nil {
		return verifyRun{}, false
	}
	vt := sk.Skill.Contract.Tool(v.Tool)
	cctx, span := startToolSpan(ctx, n, v.Tool, "verify_"+e.CallID)
	inv := sk.Chain.Invoker.Invoke(cctx, chain.Invocation{Tool: v.Tool, Args: args, Contract: vt, Locale: r.cfg.Locale})
	endToolSpan(span, inv.Observation, nil)
	if inv.Observation.Outcome != abi.OutcomeSuccess {
		r.emit(n, toolEvent(Event{Tool: v.Tool, Status: abi.SuspendVerify, Stalls: n.Stalls}, inv.Observation))
		return verifyRun{}, false
	}
	views, err := r.store.Views(n.ID)
	if err != nil {
		views = nil
	}
	call := chain.Call{Tenant: r.cfg.Tenant, CallID: "verify_" + e.CallID, Tool: v.Tool, Args: args, State: views,
		Locale: r.cfg.Locale, ToolContract: vt, Contract: toolContract(n.Contract, v.Tool)}
	for _, d := range sk.Tools {
		if d.Name == v.Tool {
			call.Schema = d.InputSchema
		}
	}
	judged, ok := sk.Chain.Judge(ctx, call, inv)
	if !ok || (judged.Outcome != abi.OutcomeSuccess && judged.Outcome != abi.OutcomeFailed) || judged.Code.HostReserved() {
		if ok {
			r.emit(n, toolEvent(Event{Tool: v.Tool, Status: abi.SuspendVerify, Stalls: n.Stalls}, judged))
		}
		return verifyRun{}, false
	}
	return verifyRun{tool: v.Tool, args: args, inv: inv, judged: judged}, true
}

// recordVerify settles write e with the verify call's verdict: SUCCESS
// with the verify tool's answer, or FAILED TOOL_BUSINESS_FAILED with what
// the check found; the model reads it as the answer to a call of the
// verify tool.
func (r *Runner) recordVerify(n state.Node, e abi.LedgerEntry, vr verifyRun) error {
	l := r.cfg.Locale
	o := abi.Success(r.text(txtVerifyTook, e.Tool, vr.tool), vr.inv.Response)
	var result *abi.Observation
	if vr.took() {
		result = &o
	} else {
		j := vr.judged
		o = abi.Failed(j.Code, r.text(txtVerifyNotTookReason, e.Tool, vr.tool, j.Text), j.Next, vr.inv.Response)
	}
	o.Locale = l
	if err := r.store.SettleUncertain(n.TaskID, e.Tool, e.Key, vr.took(), result); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	callID := "verify_" + e.CallID
	sent := r.toolMessage(callResult{Observation: o, Response: vr.inv.Response})
	if err := r.store.AppendMessages(n.ID,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: callID, Name: vr.tool, Arguments: string(vr.args)}}},
		model.Message{Role: model.RoleTool, ToolCallID: callID, Content: sent}); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	ev := withSent(withCall(toolEvent(Event{Tool: vr.tool, Stalls: n.Stalls}, o), callID, string(vr.args)), sent, nil)
	ev.Status = abi.SuspendVerify
	r.emit(n, ev)
	return nil
}

// uncertain returns the node's writes whose outcome is unknown.
func (r *Runner) uncertain(n state.Node) ([]abi.LedgerEntry, error) {
	l, err := r.store.Ledger(n.TaskID)
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	return slices.DeleteFunc(l, func(e abi.LedgerEntry) bool {
		return (e.State != abi.LedgerUnknown && e.State != abi.LedgerUnknownPreCall) || (e.NodeID != "" && e.NodeID != n.ID)
	}), nil
}

// originalArgs returns the arguments a write call was sent with: as the
// store recorded them, else as the model gave them in the call.
func (r *Runner) originalArgs(n state.Node, callID string) []byte {
	if a, ok := r.store.CallArgs(n.TaskID, callID); ok {
		return a
	}
	msgs, _ := r.store.Messages(n.ID)
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if tc.ID == callID {
				return []byte(tc.Arguments)
			}
		}
	}
	return []byte("{}")
}

// settleUncertain verifies the node's writes whose outcome is unknown,
// before the node goes on (CONTRACT_SPEC §14.3, §6.4). With verify
// configured, the verify tool is called through the skill's invoker with
// verify.args and judged by its own success: success settles the write
// SUCCESS, a business failure FAILED, and the model reads the verdict as
// the answer to a call of the verify tool. Without verify, or when the
// verify call itself fails, the node is suspended for VERIFY and the user
// is asked; done reports that.
func (r *Runner) settleUncertain(ctx context.Context, nodeID string, sk Skill) (Exit, bool, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, true, fmt.Errorf("loop: %w", err)
	}
	open, err := r.uncertain(n)
	if err != nil {
		return Exit{}, true, err
	}
	for _, e := range open {
		if vr, ok := r.runVerify(ctx, n, sk, e); ok {
			// A negative answer while the write's call could still be
			// under way is no verdict: the node waits for VERIFY.
			if vr.took() || r.tooEarly(n, sk, e, vr.tool) == nil {
				if err := r.recordVerify(n, e, vr); err != nil {
					return Exit{}, true, err
				}
				continue
			}
		}
		if n, err = r.askVerify(n, e); err != nil {
			return Exit{}, true, err
		}
		return exitOf(n), true, nil
	}
	return Exit{}, false, nil
}

// AnswerVerify resumes a node suspended for VERIFY with the user's answer
// to "did the write take effect?" (CONTRACT_SPEC §14.3): yes settles the
// write SUCCESS (it is not issued again, and it counts as completed for
// the finish check), no settles it FAILED (the model may issue it again).
// No before the write's call could have finished is refused with a
// *VerifyTooEarlyError and the node stays as it is (see VerifyNode).
// The answer enters the conversation and the node runs on.
func (r *Runner) AnswerVerify(ctx context.Context, nodeID string, took bool) (Exit, error) {
	n, err := r.store.Node(nodeID)
	if err != nil {
		return Exit{}, fmt.Errorf("loop: answer verify: %w", err)
	}
	s := n.Suspension
	if n.Status != state.Suspended || s == nil || s.Kind != abi.SuspendVerify {
		return Exit{}, fmt.Errorf("loop: answer verify node %s (%s): %w", nodeID, n.Status, ErrNotSuspended)
	}
	e, err := r.waitingWrite(n)
	if err != nil {
		return Exit{}, err
	}
	if !took {
		// The user cannot know either that a write still under way will
		// not land: "no" before its call could have finished is refused
		// as the verify tool's would be. "Yes" always counts.
		if sk, ok := r.skills[n.SkillKey]; ok {
			if err := r.tooEarly(n, sk, e, ""); err != nil {
				return Exit{}, err
			}
		}
	}
	text, answer := r.text(txtUserNotTook, e.Tool), "NO"
	var result *abi.Observation
	if took {
		text, answer = r.text(txtUserTook, e.Tool), "YES"
		o := abi.Success(text, nil)
		o.Locale = r.cfg.Locale
		result = &o
	}
	if err := r.store.SettleUncertain(n.TaskID, e.Tool, e.Key, took, result); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.SetNodeStatus(nodeID, state.Running, ""); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.AddUserMessage(answer); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	if err := r.store.AppendMessages(nodeID, model.Message{Role: model.RoleUser, Content: text}); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: e.Tool, Status: abi.SuspendVerify, Message: answer, Stalls: n.Stalls})
	return r.Run(ctx, nodeID)
}

// effect encodes one effect the loop applies itself.
func effect(kind string, payload any) (abi.Effect, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return abi.Effect{}, fmt.Errorf("loop: %s: %w", kind, err)
	}
	return abi.Effect{Kind: kind, Payload: b}, nil
}
