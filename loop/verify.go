package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/loop/chain"
	"github.com/agentwarden/warden/loop/state"
	"github.com/agentwarden/warden/model"
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
// a verify call that fails suspends the node for VERIFY again.
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
	if err := r.store.SetNodeStatus(nodeID, state.Running, ""); err != nil {
		return Exit{}, fmt.Errorf("loop: %w", err)
	}
	r.emit(n, Event{Kind: KindResume, Tool: s.Tool, Status: abi.SuspendVerify, Message: wt.Verify.Tool, Stalls: n.Stalls})
	return r.Run(ctx, nodeID)
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
	l := r.cfg.Locale
	for _, e := range open {
		orig := r.originalArgs(n, e.CallID)
		wt := sk.Skill.Contract.Tool(e.Tool)
		if v := wt.Verify; wt != nil && v != nil && slices.Contains(sk.Skill.ToolNames, v.Tool) && sk.Chain.Invoker != nil {
			args, err := v.BuildArgs(orig)
			if err == nil {
				vt := sk.Skill.Contract.Tool(v.Tool)
				cctx, span := startToolSpan(ctx, n, v.Tool, "verify_"+e.CallID)
				inv := sk.Chain.Invoker.Invoke(cctx, chain.Invocation{Tool: v.Tool, Args: args, Contract: vt, Locale: l})
				endToolSpan(span, inv.Observation, nil)
				if inv.Observation.Outcome == abi.OutcomeSuccess {
					verdict := vt.Judge(inv.Response)
					// The verdict is the observation of the verify call:
					// SUCCESS with the verify tool's answer, or FAILED
					// TOOL_BUSINESS_FAILED with what the check found.
					o := abi.Success(r.text(txtVerifyTook, e.Tool, v.Tool), inv.Response)
					var result *abi.Observation
					if verdict.OK {
						result = &o
					} else {
						o = abi.Failed(abi.ToolBusinessFailed, r.text(txtVerifyNotTookReason, e.Tool, v.Tool, verdict.Message),
							abi.NextBusiness.Text(l), inv.Response)
					}
					o.Locale = l
					if err := r.store.SettleUncertain(n.TaskID, e.Tool, e.Key, verdict.OK, result); err != nil {
						return Exit{}, true, fmt.Errorf("loop: %w", err)
					}
					callID := "verify_" + e.CallID
					sent := r.toolMessage(callResult{Observation: o, Response: inv.Response})
					if err := r.store.AppendMessages(n.ID,
						model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: callID, Name: v.Tool, Arguments: string(args)}}},
						model.Message{Role: model.RoleTool, ToolCallID: callID, Content: sent}); err != nil {
						return Exit{}, true, fmt.Errorf("loop: %w", err)
					}
					ev := withSent(withCall(toolEvent(Event{Tool: v.Tool, Stalls: n.Stalls}, o), callID, string(args)), sent, nil)
					ev.Status = abi.SuspendVerify
					r.emit(n, ev)
					continue
				}
				r.emit(n, toolEvent(Event{Tool: v.Tool, Status: abi.SuspendVerify, Stalls: n.Stalls}, inv.Observation))
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
	open, err := r.uncertain(n)
	if err != nil {
		return Exit{}, err
	}
	i := slices.IndexFunc(open, func(e abi.LedgerEntry) bool { return e.Tool == s.Tool && e.ArgsDigest == s.ArgsDigest })
	if i < 0 {
		return Exit{}, fmt.Errorf("loop: answer verify node %s: write %s: %w", nodeID, s.Tool, state.ErrNotUncertain)
	}
	e := open[i]
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
