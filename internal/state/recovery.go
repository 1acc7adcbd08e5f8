package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
)

// RecoverWrites is what a process that starts again does to the writes it
// had pre-registered (CONTRACT_SPEC §13, §14.3): an entry still STARTED
// was reserved by a call whose result was never recorded, so nobody knows
// whether the write took effect. Each becomes UNKNOWN_PRE_CALL, which the
// WriteGate defers (WRITE_PENDING_VERIFY) and the finish check refuses
// until it is verified. It returns the entries it marked.
func (m *Memory) RecoverWrites() ([]abi.LedgerEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stamp := m.opt.Now().UTC().Format(time.RFC3339)
	var marked []abi.LedgerEntry
	ids := make([]string, 0, len(m.d.tasks))
	for id := range m.d.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := m.d.tasks[id]
		for i := range t.ledger {
			if e := &t.ledger[i]; e.State == abi.LedgerStarted {
				e.State, e.UpdatedAt = abi.LedgerUnknownPreCall, stamp
				marked = append(marked, *e)
			}
		}
	}
	return marked, nil
}

// RecordCall keeps the arguments a write call was sent with (bound), so
// that a write whose outcome is unknown can be verified with them later
// (verify.args call.<path>, CONTRACT_SPEC §6.4).
func (m *Memory) RecordCall(taskID, callID string, args json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[taskID]
	if !ok {
		return fmt.Errorf("state: task %s: %w", taskID, ErrNotFound)
	}
	if callID == "" || !json.Valid(args) {
		return fmt.Errorf("state: record call %q of task %s: a call id and JSON arguments are required", callID, taskID)
	}
	if t.calls == nil {
		t.calls = map[string]json.RawMessage{}
	}
	t.calls[callID] = slices.Clone(args)
	return nil
}

// CallArgs returns the arguments RecordCall kept for a call.
func (m *Memory) CallArgs(taskID, callID string) (json.RawMessage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[taskID]
	if !ok {
		return nil, false
	}
	a, ok := t.calls[callID]
	return slices.Clone(a), ok
}

// SettleUncertain records the verdict on a write whose outcome was unknown
// (UNKNOWN or UNKNOWN_PRE_CALL), from a verify call or the user's answer
// (CONTRACT_SPEC §14.3). took settles it SUCCESS, business ok, with result
// as the observation a repeated call reuses; and the write's evidence then
// reads as a completed call (SUCCESS, business ok), registered anew when
// the call never came back. Otherwise it settles FAILED and the write may
// be issued again.
func (m *Memory) SettleUncertain(taskID, tool, key string, took bool, result *abi.Observation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.d.tasks[taskID]
	if !ok {
		return fmt.Errorf("state: task %s: %w", taskID, ErrNotFound)
	}
	i := ledgerIndex(t.ledger, tool, key)
	if i < 0 || (t.ledger[i].State != abi.LedgerUnknown && t.ledger[i].State != abi.LedgerUnknownPreCall) {
		return fmt.Errorf("state: settle write %s of task %s: %w", tool, taskID, ErrNotUncertain)
	}
	e := &t.ledger[i]
	e.UpdatedAt = m.opt.Now().UTC().Format(time.RFC3339)
	ok = took
	e.BusinessOK, e.Result = &ok, result
	if !took {
		e.State = abi.LedgerFailed
		return nil
	}
	e.State = abi.LedgerSuccess
	found := false
	for j := range m.d.evidence {
		it := &m.d.evidence[j]
		if it.Tool == tool && it.ToolCallID == e.CallID && e.CallID != "" {
			it.Status, it.BusinessOK, it.Result, it.Empty = abi.OutcomeSuccess, true, abi.ResultWithData, false
			found = true
		}
	}
	if !found {
		sum := sha256.Sum256([]byte("verified\x1f" + tool + "\x1f" + key))
		it := abi.EvidenceItem{ID: "ev_" + hex.EncodeToString(sum[:8]), SourceType: "query", Locator: tool, RetrievedAt: e.UpdatedAt,
			ToolCallID: e.CallID, Tool: tool, NodeID: e.NodeID, Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData}
		if result != nil {
			it.Excerpt, it.Payload = result.Message(), result.Data
		}
		m.d.evidence = append(m.d.evidence, it)
	}
	return nil
}
