package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// Apply validates and applies one call's effects to the node's state in
// order, all or nothing. Each payload must decode into its abi type and
// carry the fields its kind needs; an unknown kind, a malformed payload, a
// settle without a reservation, a reservation of a write that is open or
// already succeeded, a reserved scratch key, or any effect after the node
// left RUNNING is an error, and nothing is applied.
func (m *Memory) Apply(nodeID string, effects []abi.Effect) error {
	if len(effects) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.node(nodeID); err != nil {
		return err
	}
	tx := m.d.cloneFor(nodeID)
	n := tx.nodes[nodeID]
	t := tx.tasks[n.TaskID]
	if t == nil {
		return fmt.Errorf("state: node %s: task %s: %w", nodeID, n.TaskID, ErrNotFound)
	}
	now := m.opt.Now()
	for i, e := range effects {
		if n.Status != Running {
			return fmt.Errorf("state: node %s: effect %d (%s): %w (%s)", nodeID, i, e.Kind, ErrNodeNotRunning, n.Status)
		}
		if err := m.apply(&tx, t, n, e, now); err != nil {
			return fmt.Errorf("state: node %s: effect %d (%s): %w", nodeID, i, e.Kind, err)
		}
	}
	m.d = tx
	return nil
}

func decode(e abi.Effect, dst any) error {
	if len(e.Payload) == 0 {
		return fmt.Errorf("%w: empty payload", ErrInvalidEffect)
	}
	if err := json.Unmarshal(e.Payload, dst); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEffect, err)
	}
	return nil
}

func missing(fields ...string) error {
	return fmt.Errorf("%w: %s required", ErrInvalidEffect, strings.Join(fields, ", "))
}

func (m *Memory) apply(d *data, t *task, n *node, e abi.Effect, now time.Time) error {
	v, err := DecodeEffect(e)
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
		i := ledgerIndex(t.ledger, p.Tool, p.Key)
		if i < 0 {
			t.ledger = append(t.ledger, entry)
			return nil
		}
		old := t.ledger[i]
		if old.State.Open() || (old.State == abi.LedgerSuccess && (old.BusinessOK == nil || *old.BusinessOK)) {
			return fmt.Errorf("%w: write %s is already %s", ErrInvalidEffect, p.Tool, old.State)
		}
		t.ledger[i] = entry
	case *abi.LedgerSettle:
		i := ledgerIndex(t.ledger, p.Tool, p.Key)
		if i < 0 || t.ledger[i].State != abi.LedgerStarted {
			return fmt.Errorf("%w: write %s was not reserved", ErrInvalidEffect, p.Tool)
		}
		en := &t.ledger[i]
		en.State, en.BusinessOK, en.Result, en.UpdatedAt = p.State, p.BusinessOK, p.Result, stamp
	case *abi.FingerprintRecord:
		n.fingerprints = append(n.fingerprints, *p)
	case *abi.EvidenceItem:
		if p.NodeID == "" {
			p.NodeID = n.ID
		}
		d.evidence = slices.DeleteFunc(d.evidence, func(it abi.EvidenceItem) bool { return it.ID == p.ID })
		d.evidence = append(d.evidence, *p)
	case *abi.Entity:
		if p.TaskID == "" {
			p.TaskID = t.ID
		}
		recordEntity(d, *p)
	case *abi.NodeSuspend:
		n.Status, n.Suspension = Suspended, &Suspension{NodeSuspend: *p, At: now}
	case *abi.NodeFinish:
		n.Status, n.Output = Done, p.Output
		share(d, t, n)
		settleDelegation(d, n)
	case *abi.NodeFail:
		n.Status, n.Reason = Failed, p.Reason
		settleDelegation(d, n)
	case *abi.NodeDelegate:
		n.Delegations = append(n.Delegations, abi.Delegation{SkillKey: p.SkillKey, Objective: p.Objective, Status: "PENDING"})
	case *abi.OutputWrite:
		n.Outputs[p.Key] = p.OutputValue
	case *abi.StateSet:
		if slices.Contains(m.opt.ReservedKeys, p.Key) {
			return fmt.Errorf("%w: scratch key %s is reserved", ErrInvalidEffect, p.Key)
		}
		n.Scratch[p.Key] = p.Value
	}
	return nil
}

func ledgerIndex(l []abi.LedgerEntry, tool, key string) int {
	return slices.IndexFunc(l, func(e abi.LedgerEntry) bool { return e.Tool == tool && e.Key == key })
}

// recordEntity puts an entity first in the index, replacing an older
// record of the same type and id.
func recordEntity(d *data, e abi.Entity) {
	d.entities = slices.DeleteFunc(d.entities, func(x abi.Entity) bool { return x.Type == e.Type && x.ID == e.ID })
	d.entities = append([]abi.Entity{e}, d.entities...)
}

// share writes a finished node's outputs where its contract shares them
// (TASK or SESSION) and records the entities its outputs make (§8, §12
// builtin_node_finish).
func share(d *data, t *task, n *node) {
	if n.contract == nil {
		return
	}
	for _, key := range n.contract.OutputNames() {
		o := n.contract.Outputs[key]
		w, ok := n.Outputs[key]
		if !ok {
			continue
		}
		switch o.Share {
		case contract.ShareTask:
			t.shared[key] = w.Value
		case contract.ShareSession:
			d.values[key] = w.Value
		}
		if o.Entity != nil {
			for _, e := range o.Entity.Entities(w.Value) {
				recordEntity(d, abi.Entity{Type: e.Type, ID: e.ID, IDJSON: e.IDJSON, Name: e.Name, Attrs: e.Attrs, TaskID: t.ID})
			}
		}
	}
}

// settleDelegation marks the delegating node's record of this node with
// the node's final status.
func settleDelegation(d *data, n *node) {
	p, ok := d.nodes[n.ParentID]
	if !ok {
		return
	}
	for i := range p.Delegations {
		if p.Delegations[i].SkillKey == n.SkillKey && p.Delegations[i].Status == "PENDING" {
			p.Delegations[i].Status = string(n.Status)
			return
		}
	}
}
