package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
)

// RecoverWrites marks every write of the session still STARTED
// UNKNOWN_PRE_CALL and returns them, ordered by task id then ledger
// position. Call it once when the process that owns the session starts
// again: the entry was committed before the write tool was called and its
// result never was, so nobody knows whether the write took effect.
func (s *Store) RecoverWrites() ([]abi.LedgerEntry, error) {
	var marked []abi.LedgerEntry
	err := s.write(func(t *tx) error {
		type open struct {
			task  string
			entry abi.LedgerEntry
		}
		rows, err := t.query(`SELECT task_id, doc FROM ledger WHERE session_id = ? AND state = ? ORDER BY seq`, s.opt.SessionID, string(abi.LedgerStarted))
		if err != nil {
			return wrap("recover writes", err)
		}
		var found []open
		for rows.Next() {
			var o open
			var doc string
			if err := rows.Scan(&o.task, &doc); err != nil {
				rows.Close()
				return wrap("recover writes", err)
			}
			if err := json.Unmarshal([]byte(doc), &o.entry); err != nil {
				rows.Close()
				return wrap("recover writes", err)
			}
			found = append(found, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("recover writes", err)
		}
		// Byte order of task ids, as Memory sorts them, whatever the
		// database's collation.
		slices.SortStableFunc(found, func(a, b open) int {
			switch {
			case a.task < b.task:
				return -1
			case a.task > b.task:
				return 1
			}
			return 0
		})
		stamp := s.opt.Now().UTC().Format(time.RFC3339)
		for _, o := range found {
			o.entry.State, o.entry.UpdatedAt = abi.LedgerUnknownPreCall, stamp
			if err := t.updateLedger(o.task, o.entry); err != nil {
				return err
			}
			marked = append(marked, o.entry)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return marked, nil
}

// RecordCall keeps the arguments a write call was sent with, so that a
// write whose outcome is unknown can be verified with them later.
func (s *Store) RecordCall(taskID, callID string, args json.RawMessage) error {
	return s.write(func(t *tx) error {
		if _, err := t.task(taskID); err != nil {
			return err
		}
		if callID == "" || !json.Valid(args) {
			return fmt.Errorf("sqlstore: record call %q of task %s: a call id and JSON arguments are required", callID, taskID)
		}
		_, err := t.exec(`INSERT INTO write_calls (session_id, task_id, call_id, args) VALUES (?, ?, ?, ?)
ON CONFLICT (session_id, task_id, call_id) DO UPDATE SET args = excluded.args`, s.opt.SessionID, taskID, callID, string(args))
		return wrap("record call "+callID, err)
	})
}

// CallArgs returns the arguments RecordCall kept for a call; false when
// there are none or the database cannot be read.
func (s *Store) CallArgs(taskID, callID string) (json.RawMessage, bool) {
	var args string
	err := s.read(func(t *tx) error {
		return t.row(`SELECT args FROM write_calls WHERE session_id = ? AND task_id = ? AND call_id = ?`,
			s.opt.SessionID, taskID, callID).Scan(&args)
	})
	if err != nil {
		return nil, false
	}
	return json.RawMessage(args), true
}

// SettleUncertain records the verdict on a write whose outcome was
// unknown, as state.Memory's SettleUncertain does.
func (s *Store) SettleUncertain(taskID, tool, key string, took bool, result *abi.Observation) error {
	return s.write(func(t *tx) error {
		if _, err := t.task(taskID); err != nil {
			return err
		}
		e, err := t.ledgerEntry(taskID, tool, key)
		if err != nil {
			return err
		}
		if e == nil || (e.State != abi.LedgerUnknown && e.State != abi.LedgerUnknownPreCall) {
			return fmt.Errorf("sqlstore: settle write %s of task %s: %w", tool, taskID, state.ErrNotUncertain)
		}
		e.UpdatedAt = s.opt.Now().UTC().Format(time.RFC3339)
		ok := took
		e.BusinessOK, e.Result = &ok, result
		if !took {
			e.State = abi.LedgerFailed
			return t.updateLedger(taskID, *e)
		}
		e.State = abi.LedgerSuccess
		if err := t.updateLedger(taskID, *e); err != nil {
			return err
		}
		found := false
		if e.CallID != "" {
			items, err := t.evidenceRows(`SELECT id, doc FROM evidence WHERE session_id = ? ORDER BY seq`, s.opt.SessionID)
			if err != nil {
				return err
			}
			for _, it := range items {
				if it.Tool != tool || it.ToolCallID != e.CallID {
					continue
				}
				it.Status, it.BusinessOK, it.Result, it.Empty = abi.OutcomeSuccess, true, abi.ResultWithData, false
				if _, err := t.exec(`UPDATE evidence SET doc = ? WHERE session_id = ? AND id = ?`, marshal(it), s.opt.SessionID, it.ID); err != nil {
					return wrap("evidence", err)
				}
				found = true
			}
		}
		if found {
			return nil
		}
		sum := sha256.Sum256([]byte("verified\x1f" + tool + "\x1f" + key))
		it := abi.EvidenceItem{ID: "ev_" + hex.EncodeToString(sum[:8]), SourceType: "query", Locator: tool, RetrievedAt: e.UpdatedAt,
			ToolCallID: e.CallID, Tool: tool, NodeID: e.NodeID, Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData}
		if result != nil {
			it.Excerpt, it.Payload = result.Message(), result.Data
		}
		return t.registerEvidence(it)
	})
}

// evidenceRows reads evidence items by a query selecting id and doc.
func (t *tx) evidenceRows(q string, args ...any) ([]abi.EvidenceItem, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, wrap("evidence", err)
	}
	defer rows.Close()
	var out []abi.EvidenceItem
	for rows.Next() {
		var id, doc string
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, wrap("evidence", err)
		}
		var it abi.EvidenceItem
		if err := json.Unmarshal([]byte(doc), &it); err != nil {
			return nil, wrap("evidence", err)
		}
		out = append(out, it)
	}
	return out, wrap("evidence", rows.Err())
}

func (s *Store) Ledger(taskID string) ([]abi.LedgerEntry, error) {
	var out []abi.LedgerEntry
	err := s.read(func(t *tx) (err error) {
		if _, err := t.task(taskID); err != nil {
			return err
		}
		out, err = docs[abi.LedgerEntry](t, `SELECT doc FROM ledger WHERE session_id = ? AND task_id = ? ORDER BY seq`, s.opt.SessionID, taskID)
		return err
	})
	return out, err
}

// Evidence returns the node's own evidence, oldest first.
func (s *Store) Evidence(nodeID string) ([]abi.EvidenceItem, error) {
	var out []abi.EvidenceItem
	err := s.read(func(t *tx) (err error) {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		out, err = t.evidenceRows(`SELECT id, doc FROM evidence WHERE session_id = ? AND node_id = ? ORDER BY seq`, s.opt.SessionID, nodeID)
		return err
	})
	return out, err
}

func (s *Store) Fingerprints(nodeID string) ([]abi.FingerprintRecord, error) {
	var out []abi.FingerprintRecord
	err := s.read(func(t *tx) (err error) {
		if _, err := t.node(nodeID); err != nil {
			return err
		}
		out, err = docs[abi.FingerprintRecord](t, `SELECT doc FROM fingerprints WHERE session_id = ? AND node_id = ? ORDER BY seq`, s.opt.SessionID, nodeID)
		return err
	})
	return out, err
}

func (t *tx) entities() ([]abi.Entity, error) {
	return docs[abi.Entity](t, `SELECT doc FROM entities WHERE session_id = ? ORDER BY seq DESC`, t.s.opt.SessionID)
}

// Entities returns the session's entities, newest first; nil when the
// database cannot be read.
func (s *Store) Entities() []abi.Entity {
	var out []abi.Entity
	_ = s.read(func(t *tx) (err error) {
		out, err = t.entities()
		return err
	})
	return out
}

// values reads key/value rows into a map.
func (t *tx) values(q string, args ...any) (map[string]json.RawMessage, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, wrap("values", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, wrap("values", err)
		}
		out[k] = json.RawMessage(v)
	}
	return out, wrap("values", rows.Err())
}

func (t *tx) shared(taskID string) (map[string]json.RawMessage, error) {
	return t.values(`SELECT key, value FROM task_shared WHERE session_id = ? AND task_id = ?`, t.s.opt.SessionID, taskID)
}

func (t *tx) sessionValues() (map[string]json.RawMessage, error) {
	return t.values(`SELECT key, value FROM session_values WHERE session_id = ?`, t.s.opt.SessionID)
}

func (s *Store) Shared(taskID string) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	err := s.read(func(t *tx) (err error) {
		if _, err := t.task(taskID); err != nil {
			return err
		}
		out, err = t.shared(taskID)
		return err
	})
	return out, err
}

// SessionValues returns the session's shared values; nil when the
// database cannot be read.
func (s *Store) SessionValues() map[string]json.RawMessage {
	var out map[string]json.RawMessage
	_ = s.read(func(t *tx) (err error) {
		out, err = t.sessionValues()
		return err
	})
	return out
}

// SessionsWithStartedWrites lists the sessions that hold a write still
// STARTED: the ones a process that died mid-write left behind. Which of them
// to recover is the caller's decision (RecoverWrites per session): on a
// database shared by several instances, only the dead instance's sessions.
func (s *DB) SessionsWithStartedWrites(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT DISTINCT session_id FROM ledger WHERE state = ? ORDER BY session_id`), string(abi.LedgerStarted))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
	}
	return ids, nil
}
