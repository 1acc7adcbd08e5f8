package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/state"
)

// Apply validates and applies one call's effects to the node's state in
// order, in one transaction: the same rules as state.Memory's Apply, and
// an error rolls everything back. A ledger.reserve commits the STARTED
// entry before Apply returns, that is before the write tool is called.
func (s *Store) Apply(nodeID string, effects []abi.Effect) error {
	if len(effects) == 0 {
		return nil
	}
	return s.write(func(t *tx) error {
		n, err := t.node(nodeID)
		if err != nil {
			return err
		}
		tk, err := t.task(n.TaskID)
		if err != nil {
			return fmt.Errorf("sqlstore: node %s: task %s: %w", nodeID, n.TaskID, state.ErrNotFound)
		}
		now := s.opt.Now()
		for i, e := range effects {
			if n.Status != state.Running {
				return fmt.Errorf("sqlstore: node %s: effect %d (%s): %w (%s)", nodeID, i, e.Kind, state.ErrNodeNotRunning, n.Status)
			}
			if err := t.apply(tk, n, e, now); err != nil {
				return fmt.Errorf("sqlstore: node %s: effect %d (%s): %w", nodeID, i, e.Kind, err)
			}
		}
		return t.saveNode(n)
	})
}

func (t *tx) apply(tk state.Task, n *node, e abi.Effect, now time.Time) error {
	v, err := state.DecodeEffect(e)
	if err != nil {
		return err
	}
	stamp := now.UTC().Format(time.RFC3339)
	switch p := v.(type) {
	case *abi.LedgerReserve:
		entry := abi.LedgerEntry{Tool: p.Tool, Key: p.Key, State: abi.LedgerStarted, ArgsDigest: p.ArgsDigest,
			CallID: p.CallID, NodeID: n.ID, Approved: p.Approved, UpdatedAt: stamp, StartedAt: p.StartedAt}
		if entry.StartedAt == "" {
			entry.StartedAt = now.UTC().Format(time.RFC3339Nano)
		}
		old, err := t.ledgerEntry(tk.ID, p.Tool, p.Key)
		if err != nil {
			return err
		}
		if old == nil {
			return t.insertLedger(tk.ID, entry)
		}
		if old.State.Open() || (old.State == abi.LedgerSuccess && (old.BusinessOK == nil || *old.BusinessOK)) {
			return fmt.Errorf("%w: write %s is already %s", state.ErrInvalidEffect, p.Tool, old.State)
		}
		return t.updateLedger(tk.ID, entry)
	case *abi.LedgerSettle:
		en, err := t.ledgerEntry(tk.ID, p.Tool, p.Key)
		if err != nil {
			return err
		}
		if en == nil || en.State != abi.LedgerStarted {
			return fmt.Errorf("%w: write %s was not reserved", state.ErrInvalidEffect, p.Tool)
		}
		en.State, en.BusinessOK, en.Result, en.UpdatedAt = p.State, p.BusinessOK, p.Result, stamp
		return t.updateLedger(tk.ID, *en)
	case *abi.FingerprintRecord:
		seq, err := t.nextSeq("fingerprints", " AND node_id = ?", n.ID)
		if err != nil {
			return err
		}
		_, err = t.exec(`INSERT INTO fingerprints (session_id, node_id, seq, doc) VALUES (?, ?, ?, ?)`, t.s.opt.SessionID, n.ID, seq, marshal(*p))
		return wrap("fingerprint", err)
	case *abi.EvidenceItem:
		if p.NodeID == "" {
			p.NodeID = n.ID
		}
		return t.registerEvidence(*p)
	case *abi.Entity:
		if p.TaskID == "" {
			p.TaskID = tk.ID
		}
		return t.recordEntity(*p)
	case *abi.NodeSuspend:
		n.Status, n.Suspension = state.Suspended, &state.Suspension{NodeSuspend: *p, At: now}
	case *abi.NodeFinish:
		n.Status, n.Output = state.Done, p.Output
		if err := t.share(tk, n); err != nil {
			return err
		}
		return t.settleDelegation(n)
	case *abi.NodeFail:
		n.Status, n.Reason = state.Failed, p.Reason
		return t.settleDelegation(n)
	case *abi.NodeDelegate:
		n.Delegations = append(n.Delegations, abi.Delegation{SkillKey: p.SkillKey, Objective: p.Objective, Status: "PENDING"})
	case *abi.OutputWrite:
		if n.Outputs == nil {
			n.Outputs = map[string]abi.OutputValue{}
		}
		n.Outputs[p.Key] = p.OutputValue
	case *abi.StateSet:
		if slices.Contains(t.s.opt.ReservedKeys, p.Key) {
			return fmt.Errorf("%w: scratch key %s is reserved", state.ErrInvalidEffect, p.Key)
		}
		if n.Scratch == nil {
			n.Scratch = map[string]json.RawMessage{}
		}
		n.Scratch[p.Key] = p.Value
	}
	return nil
}

// ledgerEntry is the task's entry for a write, or nil.
func (t *tx) ledgerEntry(taskID, tool, key string) (*abi.LedgerEntry, error) {
	var doc string
	err := t.row(`SELECT doc FROM ledger WHERE session_id = ? AND task_id = ? AND tool = ? AND key = ?`,
		t.s.opt.SessionID, taskID, tool, key).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("ledger", err)
	}
	var e abi.LedgerEntry
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return nil, wrap("ledger", err)
	}
	return &e, nil
}

func (t *tx) insertLedger(taskID string, e abi.LedgerEntry) error {
	seq, err := t.nextSeq("ledger", " AND task_id = ?", taskID)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO ledger (session_id, task_id, tool, key, seq, state, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.s.opt.SessionID, taskID, e.Tool, e.Key, seq, string(e.State), marshal(e))
	return wrap("ledger", err)
}

// updateLedger replaces an entry in place: it keeps its position.
func (t *tx) updateLedger(taskID string, e abi.LedgerEntry) error {
	_, err := t.exec(`UPDATE ledger SET state = ?, doc = ? WHERE session_id = ? AND task_id = ? AND tool = ? AND key = ?`,
		string(e.State), marshal(e), t.s.opt.SessionID, taskID, e.Tool, e.Key)
	return wrap("ledger", err)
}

// registerEvidence puts an item last, replacing an item of the same id.
func (t *tx) registerEvidence(it abi.EvidenceItem) error {
	if _, err := t.exec(`DELETE FROM evidence WHERE session_id = ? AND id = ?`, t.s.opt.SessionID, it.ID); err != nil {
		return wrap("evidence", err)
	}
	seq, err := t.nextSeq("evidence", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO evidence (session_id, id, node_id, seq, doc) VALUES (?, ?, ?, ?, ?)`,
		t.s.opt.SessionID, it.ID, it.NodeID, seq, marshal(it))
	return wrap("evidence", err)
}

// recordEntity puts an entity first in the index, replacing an older
// record of the same type and id.
func (t *tx) recordEntity(e abi.Entity) error {
	if _, err := t.exec(`DELETE FROM entities WHERE session_id = ? AND type = ? AND id = ?`, t.s.opt.SessionID, e.Type, e.ID); err != nil {
		return wrap("entity", err)
	}
	seq, err := t.nextSeq("entities", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO entities (session_id, type, id, seq, doc) VALUES (?, ?, ?, ?, ?)`,
		t.s.opt.SessionID, e.Type, e.ID, seq, marshal(e))
	return wrap("entity", err)
}

// share writes a finished node's outputs where its contract shares them
// (TASK or SESSION) and records the entities its outputs make.
func (t *tx) share(tk state.Task, n *node) error {
	if n.contract == nil {
		return nil
	}
	for _, key := range n.contract.OutputNames() {
		o := n.contract.Outputs[key]
		w, ok := n.Outputs[key]
		if !ok {
			continue
		}
		var err error
		switch o.Share {
		case contract.ShareTask:
			_, err = t.exec(`INSERT INTO task_shared (session_id, task_id, key, value) VALUES (?, ?, ?, ?)
ON CONFLICT (session_id, task_id, key) DO UPDATE SET value = excluded.value`, t.s.opt.SessionID, tk.ID, key, string(w.Value))
		case contract.ShareSession:
			_, err = t.exec(`INSERT INTO session_values (session_id, key, value) VALUES (?, ?, ?)
ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value`, t.s.opt.SessionID, key, string(w.Value))
		}
		if err != nil {
			return wrap("share "+key, err)
		}
		if o.Entity != nil {
			for _, e := range o.Entity.Entities(w.Value) {
				if err := t.recordEntity(abi.Entity{Type: e.Type, ID: e.ID, IDJSON: e.IDJSON, Name: e.Name, Attrs: e.Attrs, TaskID: tk.ID}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// settleDelegation marks the delegating node's record of this node with
// the node's final status.
func (t *tx) settleDelegation(n *node) error {
	if n.ParentID == "" {
		return nil
	}
	p, err := t.node(n.ParentID)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := range p.Delegations {
		if p.Delegations[i].SkillKey == n.SkillKey && p.Delegations[i].Status == "PENDING" {
			p.Delegations[i].Status = string(n.Status)
			return t.saveNode(p)
		}
	}
	return nil
}
