package state

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentwarden/warden/abi"
)

// maxRecent bounds state.fingerprints.recent; the breaker looks at the last
// few calls only.
const maxRecent = 20

// Views builds every state view of a node but state.catalog (the loop's),
// each from one snapshot of the storage:
//
//   - state.node: the node, its contract, inputs, outputs, scratch, the
//     task's shared and the session's values, the platform fields, the
//     completion target, the tools completed here or in delegated
//     pre-nodes, the last executed business call, delegation facts.
//   - state.ledger: the task's writes and the bypass list.
//   - state.fingerprints: the node's recent calls and state digest.
//   - state.evidence: the node's evidence, newest first, then each
//     upstream node's, transitively and delegates included (nearest
//     first).
//   - state.entities: the session's entities, newest first.
//   - state.conversation: the session's recent user messages.
//   - state.followup: the follow-up the user answered last in this node,
//     and every follow-up answered in this task.
//   - state.approval: the held write and its approval, if any.
func (r *Rules) Views(nodeID string) (map[string]json.RawMessage, error) {
	var views map[abi.Capability]any
	err := r.view(func(tx Tx) error {
		sn, err := r.snapshot(tx, nodeID)
		if err == nil {
			views = r.build(sn)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(views))
	for k, v := range views {
		b, err := abi.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("state: view %s of node %s: %w", k, nodeID, err)
		}
		out[string(k)] = b
	}
	return out, nil
}

// snapshot is what the views of one node are built from.
type snapshot struct {
	n        *NodeRecord
	task     *Task
	shared   map[string]json.RawMessage
	values   map[string]json.RawMessage
	ledger   []abi.LedgerEntry
	evidence []abi.EvidenceItem // the session's, oldest first
	children []string           // the nodes the node delegated
	upstream []string           // UpstreamClosure of the node
	entities []abi.Entity
	messages []string
	answered []abi.FollowUp
	prints   []abi.FingerprintRecord
}

// snapshot reads everything the views of a node are built from.
func (r *Rules) snapshot(tx Tx, nodeID string) (*snapshot, error) {
	n, t, err := nodeTask(tx, nodeID)
	if err != nil {
		return nil, err
	}
	sn := &snapshot{n: n, task: t}
	if n.Gated, n.Approved, err = tx.Approval(nodeID); err != nil {
		return nil, err
	}
	reads := []func() error{
		func() (err error) { sn.shared, err = tx.Shared(t.ID); return },
		func() (err error) { sn.values, err = tx.Values(); return },
		func() (err error) { sn.ledger, err = tx.Ledger(t.ID); return },
		func() (err error) { sn.evidence, err = tx.Evidence(); return },
		func() (err error) { sn.entities, err = tx.Entities(); return },
		func() (err error) { sn.answered, err = tx.FollowUps(t.ID); return },
		func() (err error) { sn.prints, err = tx.Fingerprints(nodeID); return },
		func() (err error) { sn.messages, err = tx.UserMessages(r.opt.Conversation); return },
		func() (err error) { sn.children, err = tx.Children(nodeID); return },
		func() (err error) { sn.upstream, err = UpstreamClosure(n.ID, n.Upstream, tx.Upstream); return },
	}
	for _, read := range reads {
		if err := read(); err != nil {
			return nil, err
		}
	}
	return sn, nil
}

// build makes the views of a snapshot.
func (r *Rules) build(sn *snapshot) map[abi.Capability]any {
	n := sn.n
	if n.Outputs == nil {
		n.Outputs = map[string]abi.OutputValue{}
	}
	if n.Scratch == nil {
		n.Scratch = map[string]json.RawMessage{}
	}
	ev := sn.evidenceView()
	return map[abi.Capability]any{
		abi.CapStateNode:         r.nodeView(sn, ev),
		abi.CapStateLedger:       abi.LedgerView{Entries: nonNil(sn.ledger), BypassTools: r.opt.BypassTools},
		abi.CapStateFingerprints: r.fingerprintView(sn),
		abi.CapStateEvidence:     abi.EvidenceView{Items: nonNil(ev)},
		abi.CapStateEntities:     abi.EntitiesView{Entities: nonNil(sn.entities)},
		abi.CapStateConversation: abi.ConversationView{UserMessages: nonNil(sn.messages)},
		abi.CapStateFollowUp:     abi.FollowUpView{Current: n.FollowUp, Answered: sn.answered},
		abi.CapStateApproval:     abi.ApprovalView{Gated: n.Gated, Approved: n.Approved},
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func last[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (r *Rules) nodeView(sn *snapshot, ev []abi.EvidenceItem) abi.NodeView {
	n, t := sn.n, sn.task
	v := abi.NodeView{
		SessionID: r.opt.SessionID, TaskID: t.ID, NodeID: n.ID, Status: string(n.Status), SkillKey: n.SkillKey,
		Depth: n.Depth, Contract: n.Contract, ToolNames: n.ToolNames,
		Inputs: n.Inputs, Outputs: n.Outputs, Shared: sn.shared, Session: sn.values, Platform: PlatformOf(n.Node, r.opt.Platform),
		Scratch: n.Scratch, Target: n.Target, TargetClaimed: n.TargetClaimed,
		OutputsUsed: n.HasDependents, Skills: n.Skills, Delegatable: n.Delegatable,
		DelegateMaxDepth: n.DelegateMaxDepth, Delegations: n.Delegations, ReservedKeys: r.opt.ReservedKeys,
	}
	if c := n.Parsed; c != nil && !v.OutputsUsed {
		for _, o := range c.Outputs {
			if o.Required || o.Share != "" || o.Entity != nil {
				v.OutputsUsed = true
			}
		}
	}
	// Completed tools: this node's and its delegated pre-nodes'.
	for _, it := range ev {
		if it.Status != abi.OutcomeSuccess || !it.BusinessOK || slices.Contains(v.DoneTools, it.Tool) {
			continue
		}
		if it.NodeID == n.ID || slices.Contains(sn.children, it.NodeID) {
			v.DoneTools = append(v.DoneTools, it.Tool)
		}
	}
	for i := len(sn.evidence) - 1; i >= 0; i-- {
		if it := sn.evidence[i]; it.NodeID == n.ID {
			v.LastBusiness = &abi.CallSummary{Tool: it.Tool, Outcome: it.Status, Empty: it.Empty, BusinessOK: it.BusinessOK}
			break
		}
	}
	return v
}

// evidenceView lists the node's evidence newest first, then its upstream
// nodes' nearest first (UpstreamClosure), newest first within each.
func (sn *snapshot) evidenceView() []abi.EvidenceItem {
	var out []abi.EvidenceItem
	for _, id := range append([]string{sn.n.ID}, sn.upstream...) {
		for i := len(sn.evidence) - 1; i >= 0; i-- {
			if sn.evidence[i].NodeID == id {
				out = append(out, sn.evidence[i])
			}
		}
	}
	return out
}

func (r *Rules) fingerprintView(sn *snapshot) abi.FingerprintView {
	n := sn.n
	var ids []string
	for _, it := range sn.evidence {
		if it.NodeID == n.ID {
			ids = append(ids, it.ID)
		}
	}
	doc, _ := abi.Marshal(struct {
		Outputs  map[string]abi.OutputValue `json:"outputs"`
		Scratch  map[string]json.RawMessage `json:"scratch"`
		Evidence []string                   `json:"evidence"`
	}{n.Outputs, n.Scratch, ids})
	return abi.FingerprintView{Limit: r.opt.FingerprintLimit, StateDigest: ArgsDigest(doc),
		Recent: nonNil(last(sn.prints, maxRecent)), RepeatTools: r.opt.RepeatTools}
}

// PlatformOf is the platform fields a node's views show: the node's own
// (the login identity of the round that started its task), else the
// store's.
func PlatformOf(n Node, store map[string]json.RawMessage) map[string]json.RawMessage {
	if n.Platform != nil {
		return n.Platform
	}
	return store
}
