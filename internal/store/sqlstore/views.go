package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
)

// maxRecent bounds state.fingerprints.recent, as in state.Memory.
const maxRecent = 20

// Views builds every state view of a node but state.catalog from one
// snapshot of the database, byte for byte what state.Memory builds from
// the same state.
func (s *Store) Views(nodeID string) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	err := s.read(func(t *tx) error {
		v, err := t.views(nodeID)
		out = v
		return err
	})
	return out, err
}

// snapshot is what the views of one node are built from.
type snapshot struct {
	n        *node
	task     state.Task
	shared   map[string]json.RawMessage
	values   map[string]json.RawMessage
	ledger   []abi.LedgerEntry
	evidence []abi.EvidenceItem // the session's, oldest first
	parents  map[string]string  // node id → parent id
	upstream []string           // state.UpstreamClosure of the node
	entities []abi.Entity
	messages []string
	answered []abi.FollowUp
	prints   []abi.FingerprintRecord
}

func (t *tx) views(nodeID string) (map[string]json.RawMessage, error) {
	n, err := t.node(nodeID)
	if err != nil {
		return nil, err
	}
	if n.Gated, n.Approved, err = t.approval(nodeID); err != nil {
		return nil, err
	}
	sn := snapshot{n: n}
	if sn.task, err = t.task(n.TaskID); err != nil {
		return nil, fmt.Errorf("sqlstore: node %s: task %s: %w", nodeID, n.TaskID, state.ErrNotFound)
	}
	sid := t.s.opt.SessionID
	if sn.shared, err = t.shared(n.TaskID); err != nil {
		return nil, err
	}
	if sn.values, err = t.sessionValues(); err != nil {
		return nil, err
	}
	if sn.ledger, err = docs[abi.LedgerEntry](t, `SELECT doc FROM ledger WHERE session_id = ? AND task_id = ? ORDER BY seq`, sid, n.TaskID); err != nil {
		return nil, err
	}
	if sn.evidence, err = t.evidenceRows(`SELECT id, doc FROM evidence WHERE session_id = ? ORDER BY seq`, sid); err != nil {
		return nil, err
	}
	if sn.entities, err = t.entities(); err != nil {
		return nil, err
	}
	if sn.answered, err = docs[abi.FollowUp](t, `SELECT doc FROM followups WHERE session_id = ? AND task_id = ? ORDER BY seq`, sid, n.TaskID); err != nil {
		return nil, err
	}
	if sn.prints, err = docs[abi.FingerprintRecord](t, `SELECT doc FROM fingerprints WHERE session_id = ? AND node_id = ? ORDER BY seq`, sid, nodeID); err != nil {
		return nil, err
	}
	if sn.messages, err = t.userMessages(t.s.opt.Conversation); err != nil {
		return nil, err
	}
	if sn.parents, err = t.parents(); err != nil {
		return nil, err
	}
	if sn.upstream, err = state.UpstreamClosure(n.ID, n.Upstream, t.upstreamOf); err != nil {
		return nil, err
	}
	ev := sn.evidenceView()
	views := map[abi.Capability]any{
		abi.CapStateNode:         t.s.nodeView(&sn, ev),
		abi.CapStateLedger:       abi.LedgerView{Entries: nonNil(sn.ledger), BypassTools: t.s.opt.BypassTools},
		abi.CapStateFingerprints: t.s.fingerprintView(&sn),
		abi.CapStateEvidence:     abi.EvidenceView{Items: nonNil(ev)},
		abi.CapStateEntities:     abi.EntitiesView{Entities: nonNil(sn.entities)},
		abi.CapStateConversation: abi.ConversationView{UserMessages: nonNil(sn.messages)},
		abi.CapStateFollowUp:     abi.FollowUpView{Current: n.FollowUp, Answered: sn.answered},
		abi.CapStateApproval:     abi.ApprovalView{Gated: n.Gated, Approved: n.Approved},
	}
	out := make(map[string]json.RawMessage, len(views))
	for k, v := range views {
		b, err := abi.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: view %s of node %s: %w", k, nodeID, err)
		}
		out[string(k)] = b
	}
	return out, nil
}

// userMessages are the session's last max user messages, oldest first.
func (t *tx) userMessages(max int) ([]string, error) {
	rows, err := t.query(`SELECT text FROM user_messages WHERE session_id = ? ORDER BY seq DESC LIMIT ?`, t.s.opt.SessionID, max)
	if err != nil {
		return nil, wrap("user messages", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, wrap("user messages", err)
		}
		out = append(out, m)
	}
	slices.Reverse(out)
	return out, wrap("user messages", rows.Err())
}

// upstreamOf reads a node's Upstream; a node not stored has none.
func (t *tx) upstreamOf(id string) ([]string, error) {
	var doc string
	err := t.row(`SELECT doc FROM nodes WHERE session_id = ? AND id = ?`, t.s.opt.SessionID, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("node "+id, err)
	}
	var d struct{ Upstream []string }
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return nil, wrap("node "+id, err)
	}
	return d.Upstream, nil
}

func (t *tx) parents() (map[string]string, error) {
	rows, err := t.query(`SELECT id, parent_id FROM nodes WHERE session_id = ?`, t.s.opt.SessionID)
	if err != nil {
		return nil, wrap("nodes", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, p string
		if err := rows.Scan(&id, &p); err != nil {
			return nil, wrap("nodes", err)
		}
		out[id] = p
	}
	return out, wrap("nodes", rows.Err())
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Store) nodeView(sn *snapshot, ev []abi.EvidenceItem) abi.NodeView {
	n, tk := sn.n, sn.task
	outputs, scratch := n.Outputs, n.Scratch
	if outputs == nil {
		outputs = map[string]abi.OutputValue{}
	}
	if scratch == nil {
		scratch = map[string]json.RawMessage{}
	}
	v := abi.NodeView{
		SessionID: s.opt.SessionID, TaskID: tk.ID, NodeID: n.ID, Status: string(n.Status), SkillKey: n.SkillKey,
		Depth: n.Depth, Contract: n.Contract, ToolNames: n.ToolNames,
		Inputs: n.Inputs, Outputs: outputs, Shared: sn.shared, Session: sn.values, Platform: state.PlatformOf(n.Node, s.opt.Platform),
		Scratch: scratch, Target: n.Target, TargetClaimed: n.TargetClaimed,
		OutputsUsed: n.HasDependents, Skills: n.Skills, Delegatable: n.Delegatable,
		DelegateMaxDepth: n.DelegateMaxDepth, Delegations: n.Delegations, ReservedKeys: s.opt.ReservedKeys,
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
		if p, ok := sn.parents[it.NodeID]; it.NodeID == n.ID || (ok && p == n.ID) {
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
// nodes' nearest first (state.UpstreamClosure, sn.upstream), newest first
// within each.
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

func (s *Store) fingerprintView(sn *snapshot) abi.FingerprintView {
	n := sn.n
	var ids []string
	for _, it := range sn.evidence {
		if it.NodeID == n.ID {
			ids = append(ids, it.ID)
		}
	}
	outputs, scratch := n.Outputs, n.Scratch
	if outputs == nil {
		outputs = map[string]abi.OutputValue{}
	}
	if scratch == nil {
		scratch = map[string]json.RawMessage{}
	}
	doc, _ := abi.Marshal(struct {
		Outputs  map[string]abi.OutputValue `json:"outputs"`
		Scratch  map[string]json.RawMessage `json:"scratch"`
		Evidence []string                   `json:"evidence"`
	}{outputs, scratch, ids})
	recent := sn.prints
	if len(recent) > maxRecent {
		recent = recent[len(recent)-maxRecent:]
	}
	return abi.FingerprintView{Limit: s.opt.FingerprintLimit, StateDigest: state.ArgsDigest(doc),
		Recent: nonNil(recent), RepeatTools: s.opt.RepeatTools}
}
