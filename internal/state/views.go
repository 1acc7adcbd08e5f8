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
// each a snapshot taken now:
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
func (m *Memory) Views(nodeID string) (map[string]json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.node(nodeID)
	if err != nil {
		return nil, err
	}
	t := m.d.tasks[n.TaskID]
	if t == nil {
		return nil, fmt.Errorf("state: node %s: task %s: %w", nodeID, n.TaskID, ErrNotFound)
	}
	ev := m.evidenceView(n)
	views := map[abi.Capability]any{
		abi.CapStateNode:         m.nodeView(t, n, ev),
		abi.CapStateLedger:       abi.LedgerView{Entries: nonNil(t.ledger), BypassTools: m.opt.BypassTools},
		abi.CapStateFingerprints: m.fingerprintView(n),
		abi.CapStateEvidence:     abi.EvidenceView{Items: nonNil(ev)},
		abi.CapStateEntities:     abi.EntitiesView{Entities: nonNil(m.d.entities)},
		abi.CapStateConversation: abi.ConversationView{UserMessages: nonNil(last(m.d.userMessages, m.opt.Conversation))},
		abi.CapStateFollowUp:     abi.FollowUpView{Current: n.FollowUp, Answered: t.answered},
		abi.CapStateApproval:     abi.ApprovalView{Gated: n.Gated, Approved: n.Approved},
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

func (m *Memory) nodeView(t *task, n *node, ev []abi.EvidenceItem) abi.NodeView {
	v := abi.NodeView{
		SessionID: m.opt.SessionID, TaskID: t.ID, NodeID: n.ID, Status: string(n.Status), SkillKey: n.SkillKey,
		Depth: n.Depth, Contract: n.Contract, ToolNames: n.ToolNames,
		Inputs: n.Inputs, Outputs: n.Outputs, Shared: t.shared, Session: m.d.values, Platform: PlatformOf(n.Node, m.opt.Platform),
		Scratch: n.Scratch, Target: n.Target, TargetClaimed: n.TargetClaimed,
		OutputsUsed: n.HasDependents, Skills: n.Skills, Delegatable: n.Delegatable,
		DelegateMaxDepth: n.DelegateMaxDepth, Delegations: n.Delegations, ReservedKeys: m.opt.ReservedKeys,
	}
	if c := n.contract; c != nil && !v.OutputsUsed {
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
		if it.NodeID == n.ID || m.delegatedBy(it.NodeID, n.ID) {
			v.DoneTools = append(v.DoneTools, it.Tool)
		}
	}
	for i := len(m.d.evidence) - 1; i >= 0; i-- {
		if it := m.d.evidence[i]; it.NodeID == n.ID {
			v.LastBusiness = &abi.CallSummary{Tool: it.Tool, Outcome: it.Status, Empty: it.Empty, BusinessOK: it.BusinessOK}
			break
		}
	}
	return v
}

func (m *Memory) delegatedBy(child, parent string) bool {
	c, ok := m.d.nodes[child]
	return ok && c.ParentID == parent
}

// evidenceView lists the node's evidence newest first, then its upstream
// nodes' nearest first (UpstreamClosure), newest first within each.
func (m *Memory) evidenceView(n *node) []abi.EvidenceItem {
	var out []abi.EvidenceItem
	up, _ := UpstreamClosure(n.ID, n.Upstream, func(id string) ([]string, error) {
		if u, ok := m.d.nodes[id]; ok {
			return u.Upstream, nil
		}
		return nil, nil
	})
	for _, id := range append([]string{n.ID}, up...) {
		for i := len(m.d.evidence) - 1; i >= 0; i-- {
			if m.d.evidence[i].NodeID == id {
				out = append(out, m.d.evidence[i])
			}
		}
	}
	return out
}

func (m *Memory) fingerprintView(n *node) abi.FingerprintView {
	var ids []string
	for _, it := range m.d.evidence {
		if it.NodeID == n.ID {
			ids = append(ids, it.ID)
		}
	}
	doc, _ := abi.Marshal(struct {
		Outputs  map[string]abi.OutputValue `json:"outputs"`
		Scratch  map[string]json.RawMessage `json:"scratch"`
		Evidence []string                   `json:"evidence"`
	}{n.Outputs, n.Scratch, ids})
	return abi.FingerprintView{Limit: m.opt.FingerprintLimit, StateDigest: ArgsDigest(doc),
		Recent: nonNil(last(n.fingerprints, maxRecent)), RepeatTools: m.opt.RepeatTools}
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
