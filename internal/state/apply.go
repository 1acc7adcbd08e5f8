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
// order, in one transaction, all or nothing. Each payload must decode into
// its abi type and carry the fields its kind needs; an unknown kind, a
// malformed payload, a settle without a reservation, a reservation of a
// write that is open or already succeeded, a reserved scratch key, or any
// effect after the node left RUNNING is an error, and nothing is applied.
// On a durable storage a ledger.reserve is kept before Apply returns, that
// is before the write tool is called.
func (r *Rules) Apply(nodeID string, effects []abi.Effect) error {
	if len(effects) == 0 {
		return nil
	}
	return r.update(func(tx Tx) error {
		n, t, err := nodeTask(tx, nodeID)
		if err != nil {
			return err
		}
		now := r.opt.Now()
		for i, e := range effects {
			if n.Status != Running {
				return fmt.Errorf("state: node %s: effect %d (%s): %w (%s)", nodeID, i, e.Kind, ErrNodeNotRunning, n.Status)
			}
			if err := r.apply(tx, t, n, e, now); err != nil {
				return fmt.Errorf("state: node %s: effect %d (%s): %w", nodeID, i, e.Kind, err)
			}
		}
		return tx.SaveNode(*n)
	})
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

// apply applies one effect: the node's own changes to n (saved by Apply),
// everything else through tx.
func (r *Rules) apply(tx Tx, t *Task, n *NodeRecord, e abi.Effect, now time.Time) error {
	v, err := DecodeEffect(e)
	if err != nil {
		return err
	}
	stamp := now.UTC().Format(time.RFC3339)
	switch p := v.(type) {
	case *abi.LedgerReserve:
		return reserveWrite(tx, t.ID, n.ID, p, now)
	case *abi.LedgerSettle:
		en, err := tx.LedgerEntry(t.ID, p.Tool, p.Key)
		if err != nil {
			return err
		}
		if en == nil || en.State != abi.LedgerStarted {
			return fmt.Errorf("%w: write %s was not reserved", ErrInvalidEffect, p.Tool)
		}
		en.State, en.BusinessOK, en.Result, en.UpdatedAt = p.State, p.BusinessOK, p.Result, stamp
		return tx.UpdateLedger(t.ID, *en)
	case *abi.FingerprintRecord:
		return tx.AddFingerprint(n.ID, *p)
	case *abi.EvidenceItem:
		if p.NodeID == "" {
			p.NodeID = n.ID
		}
		return tx.PutEvidence(*p)
	case *abi.Entity:
		if p.TaskID == "" {
			p.TaskID = t.ID
		}
		return tx.PutEntity(*p)
	case *abi.NodeSuspend:
		n.Status, n.Suspension = Suspended, &Suspension{NodeSuspend: *p, At: now}
	case *abi.NodeFinish:
		n.Status, n.Output = Done, p.Output
		if err := share(tx, t.ID, n); err != nil {
			return err
		}
		return settleDelegation(tx, n)
	case *abi.NodeFail:
		n.Status, n.Reason = Failed, p.Reason
		return settleDelegation(tx, n)
	case *abi.NodeDelegate:
		n.Delegations = append(n.Delegations, abi.Delegation{SkillKey: p.SkillKey, Objective: p.Objective, Status: "PENDING"})
	case *abi.OutputWrite:
		if n.Outputs == nil {
			n.Outputs = map[string]abi.OutputValue{}
		}
		n.Outputs[p.Key] = p.OutputValue
	case *abi.StateSet:
		if slices.Contains(r.opt.ReservedKeys, p.Key) {
			return fmt.Errorf("%w: scratch key %s is reserved", ErrInvalidEffect, p.Key)
		}
		if n.Scratch == nil {
			n.Scratch = map[string]json.RawMessage{}
		}
		n.Scratch[p.Key] = p.Value
	}
	return nil
}

// reserveWrite pre-registers a write STARTED (§14): a write that is open
// (STARTED, UNKNOWN, UNKNOWN_PRE_CALL) or succeeded (SUCCESS, business ok
// or not said) is not reserved again; a FAILED one, or one that succeeded
// with a business failure, may be. With no entry under the key, an entry
// under its legacy form (abi.LedgerReserve.LegacyKey, reserved before the
// canonical form changed) is the write's: open or succeeded it refuses the
// reservation, else the write is reserved under the current key.
func reserveWrite(tx Tx, taskID, nodeID string, p *abi.LedgerReserve, now time.Time) error {
	entry := abi.LedgerEntry{Tool: p.Tool, Key: p.Key, State: abi.LedgerStarted, ArgsDigest: p.ArgsDigest,
		CallID: p.CallID, NodeID: nodeID, Approved: p.Approved, UpdatedAt: now.UTC().Format(time.RFC3339), StartedAt: p.StartedAt}
	if entry.StartedAt == "" {
		entry.StartedAt = now.UTC().Format(time.RFC3339Nano)
	}
	old, err := tx.LedgerEntry(taskID, p.Tool, p.Key)
	if err != nil {
		return err
	}
	if old == nil && p.LegacyKey != "" && p.LegacyKey != p.Key {
		legacy, err := tx.LedgerEntry(taskID, p.Tool, p.LegacyKey)
		if err != nil {
			return err
		}
		if legacy != nil && blocksReserve(legacy) {
			return fmt.Errorf("%w: write %s is already %s", ErrInvalidEffect, p.Tool, legacy.State)
		}
	}
	if old == nil {
		return tx.InsertLedger(taskID, entry)
	}
	if blocksReserve(old) {
		return fmt.Errorf("%w: write %s is already %s", ErrInvalidEffect, p.Tool, old.State)
	}
	return tx.UpdateLedger(taskID, entry)
}

// blocksReserve reports whether an entry refuses a new reservation of its
// write: it is open or succeeded (business ok or not said).
func blocksReserve(e *abi.LedgerEntry) bool {
	return e.State.Open() || (e.State == abi.LedgerSuccess && (e.BusinessOK == nil || *e.BusinessOK))
}

// share writes a finished node's outputs where its contract shares them
// (TASK or SESSION) and records the entities its outputs make (§8, §12
// builtin_node_finish).
func share(tx Tx, taskID string, n *NodeRecord) error {
	if n.Parsed == nil {
		return nil
	}
	for _, key := range n.Parsed.OutputNames() {
		o := n.Parsed.Outputs[key]
		w, ok := n.Outputs[key]
		if !ok {
			continue
		}
		var err error
		switch o.Share {
		case contract.ShareTask:
			err = tx.SetShared(taskID, key, w.Value)
		case contract.ShareSession:
			err = tx.SetValue(key, w.Value)
		}
		if err != nil {
			return err
		}
		if o.Entity == nil {
			continue
		}
		for _, e := range o.Entity.Entities(w.Value) {
			if err := tx.PutEntity(abi.Entity{Type: e.Type, ID: e.ID, IDJSON: e.IDJSON, Name: e.Name, Attrs: e.Attrs, TaskID: taskID}); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleDelegation marks the delegating node's record of this node with
// the node's final status.
func settleDelegation(tx Tx, n *NodeRecord) error {
	if n.ParentID == "" {
		return nil
	}
	p, err := tx.Node(n.ParentID)
	if err != nil || p == nil {
		return err
	}
	for i := range p.Delegations {
		if p.Delegations[i].SkillKey == n.SkillKey && p.Delegations[i].Status == "PENDING" {
			p.Delegations[i].Status = string(n.Status)
			return tx.SaveNode(*p)
		}
	}
	return nil
}
