package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
)

// RecoverWrites is what a process that starts again does to the writes it
// had pre-registered (CONTRACT_SPEC §13, §14.3): an entry still STARTED
// was reserved by a call whose result was never recorded, so nobody knows
// whether the write took effect. Each becomes UNKNOWN_PRE_CALL, which the
// WriteGate defers (WRITE_PENDING_VERIFY) and the finish check refuses
// until it is verified. It returns the entries it marked, ordered by task
// id (bytewise) then ledger position.
func (r *Rules) RecoverWrites() ([]abi.LedgerEntry, error) {
	var marked []abi.LedgerEntry
	err := r.update(func(tx Tx) error {
		found, err := tx.Writes(abi.LedgerStarted)
		if err != nil {
			return err
		}
		slices.SortStableFunc(found, func(a, b TaskWrite) int { return strings.Compare(a.TaskID, b.TaskID) })
		stamp := r.opt.Now().UTC().Format(time.RFC3339)
		for _, w := range found {
			w.Entry.State, w.Entry.UpdatedAt = abi.LedgerUnknownPreCall, stamp
			if err := tx.UpdateLedger(w.TaskID, w.Entry); err != nil {
				return err
			}
			marked = append(marked, w.Entry)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return marked, nil
}

// RecordCall keeps the arguments a write call was sent with (bound), so
// that a write whose outcome is unknown can be verified with them later
// (verify.args call.<path>, CONTRACT_SPEC §6.4).
func (r *Rules) RecordCall(taskID, callID string, args json.RawMessage) error {
	return r.update(func(tx Tx) error {
		if _, err := task(tx, taskID); err != nil {
			return err
		}
		if callID == "" || !json.Valid(args) {
			return fmt.Errorf("state: record call %q of task %s: a call id and JSON arguments are required", callID, taskID)
		}
		return tx.PutCallArgs(taskID, callID, slices.Clone(args))
	})
}

// CallArgs returns the arguments RecordCall kept for a call; false when
// there are none or the storage cannot be read.
func (r *Rules) CallArgs(taskID, callID string) (json.RawMessage, bool) {
	var args json.RawMessage
	var ok bool
	err := r.view(func(tx Tx) (err error) {
		args, ok, err = tx.CallArgs(taskID, callID)
		return err
	})
	if err != nil || !ok {
		return nil, false
	}
	return args, true
}

// SettleUncertain records the verdict on a write whose outcome was unknown
// (UNKNOWN or UNKNOWN_PRE_CALL), from a verify call or the user's answer
// (CONTRACT_SPEC §14.3). took settles it SUCCESS, business ok, with result
// as the observation a repeated call reuses; and the write's evidence then
// reads as a completed call (SUCCESS, business ok), registered anew when
// the call never came back. Otherwise it settles FAILED and the write may
// be issued again.
func (r *Rules) SettleUncertain(taskID, tool, key string, took bool, result *abi.Observation) error {
	return r.update(func(tx Tx) error {
		if _, err := task(tx, taskID); err != nil {
			return err
		}
		e, err := tx.LedgerEntry(taskID, tool, key)
		if err != nil {
			return err
		}
		if e == nil || (e.State != abi.LedgerUnknown && e.State != abi.LedgerUnknownPreCall) {
			return fmt.Errorf("state: settle write %s of task %s: %w", tool, taskID, ErrNotUncertain)
		}
		e.UpdatedAt = r.opt.Now().UTC().Format(time.RFC3339)
		ok := took
		e.BusinessOK, e.Result = &ok, result
		e.State = abi.LedgerFailed
		if took {
			e.State = abi.LedgerSuccess
		}
		if err := tx.UpdateLedger(taskID, *e); err != nil || !took {
			return err
		}
		return verifiedEvidence(tx, *e, result)
	})
}

// verifiedEvidence makes the evidence of a write settled SUCCESS read as a
// completed call: the call's items if it came back, else a new item.
func verifiedEvidence(tx Tx, e abi.LedgerEntry, result *abi.Observation) error {
	found := false
	if e.CallID != "" {
		items, err := tx.Evidence()
		if err != nil {
			return err
		}
		for _, it := range items {
			if it.Tool != e.Tool || it.ToolCallID != e.CallID {
				continue
			}
			it.Status, it.BusinessOK, it.Result, it.Empty = abi.OutcomeSuccess, true, abi.ResultWithData, false
			if err := tx.UpdateEvidence(it); err != nil {
				return err
			}
			found = true
		}
	}
	if found {
		return nil
	}
	sum := sha256.Sum256([]byte("verified\x1f" + e.Tool + "\x1f" + e.Key))
	it := abi.EvidenceItem{ID: "ev_" + hex.EncodeToString(sum[:8]), SourceType: "query", Locator: e.Tool, RetrievedAt: e.UpdatedAt,
		ToolCallID: e.CallID, Tool: e.Tool, NodeID: e.NodeID, Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData}
	if result != nil {
		it.Excerpt, it.Payload = result.Message(), result.Data
	}
	return tx.PutEvidence(it)
}
