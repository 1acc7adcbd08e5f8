package sqlstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// The session's ordered lists and keyed values: the ledger, evidence,
// entities, fingerprints, shared values, messages, follow-ups and the
// arguments of write calls.

// docs reads the doc column of a query's rows into a slice.
func docs[T any](t *tx, q string, args ...any) ([]T, error) {
	rows, err := t.query(q, args...)
	if err != nil {
		return nil, wrap("query", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, wrap("scan", err)
		}
		var v T
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return nil, wrap("decode", err)
		}
		out = append(out, v)
	}
	return out, wrap("rows", rows.Err())
}

func (t *tx) Ledger(taskID string) ([]abi.LedgerEntry, error) {
	return docs[abi.LedgerEntry](t, `SELECT doc FROM ledger WHERE session_id = ? AND task_id = ? ORDER BY seq`, t.sid(), taskID)
}

// LedgerEntry is the task's entry for a write, or nil.
func (t *tx) LedgerEntry(taskID, tool, key string) (*abi.LedgerEntry, error) {
	var doc string
	err := t.row(`SELECT doc FROM ledger WHERE session_id = ? AND task_id = ? AND tool = ? AND key = ?`,
		t.sid(), taskID, tool, key).Scan(&doc)
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

func (t *tx) InsertLedger(taskID string, e abi.LedgerEntry) error {
	seq, err := t.nextSeq("ledger", " AND task_id = ?", taskID)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO ledger (session_id, task_id, tool, key, seq, state, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.sid(), taskID, e.Tool, e.Key, seq, string(e.State), marshal(e))
	return wrap("ledger", err)
}

// UpdateLedger replaces an entry in place: it keeps its position.
func (t *tx) UpdateLedger(taskID string, e abi.LedgerEntry) error {
	_, err := t.exec(`UPDATE ledger SET state = ?, doc = ? WHERE session_id = ? AND task_id = ? AND tool = ? AND key = ?`,
		string(e.State), marshal(e), t.sid(), taskID, e.Tool, e.Key)
	return wrap("ledger", err)
}

// Writes are the session's entries in a state, each task's in ledger order.
func (t *tx) Writes(s abi.LedgerState) ([]state.TaskWrite, error) {
	rows, err := t.query(`SELECT task_id, doc FROM ledger WHERE session_id = ? AND state = ? ORDER BY seq`, t.sid(), string(s))
	if err != nil {
		return nil, wrap("ledger", err)
	}
	defer rows.Close()
	var out []state.TaskWrite
	for rows.Next() {
		var w state.TaskWrite
		var doc string
		if err := rows.Scan(&w.TaskID, &doc); err != nil {
			return nil, wrap("ledger", err)
		}
		if err := json.Unmarshal([]byte(doc), &w.Entry); err != nil {
			return nil, wrap("ledger", err)
		}
		out = append(out, w)
	}
	return out, wrap("ledger", rows.Err())
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

func (t *tx) Evidence() ([]abi.EvidenceItem, error) {
	return t.evidenceRows(`SELECT id, doc FROM evidence WHERE session_id = ? ORDER BY seq`, t.sid())
}

func (t *tx) NodeEvidence(nodeID string) ([]abi.EvidenceItem, error) {
	return t.evidenceRows(`SELECT id, doc FROM evidence WHERE session_id = ? AND node_id = ? ORDER BY seq`, t.sid(), nodeID)
}

// PutEvidence puts an item last, replacing an item of the same id.
func (t *tx) PutEvidence(it abi.EvidenceItem) error {
	if _, err := t.exec(`DELETE FROM evidence WHERE session_id = ? AND id = ?`, t.sid(), it.ID); err != nil {
		return wrap("evidence", err)
	}
	seq, err := t.nextSeq("evidence", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO evidence (session_id, id, node_id, seq, doc) VALUES (?, ?, ?, ?, ?)`,
		t.sid(), it.ID, it.NodeID, seq, marshal(it))
	return wrap("evidence", err)
}

func (t *tx) UpdateEvidence(it abi.EvidenceItem) error {
	_, err := t.exec(`UPDATE evidence SET doc = ? WHERE session_id = ? AND id = ?`, marshal(it), t.sid(), it.ID)
	return wrap("evidence", err)
}

// Entities are the session's entities, the last put first.
func (t *tx) Entities() ([]abi.Entity, error) {
	return docs[abi.Entity](t, `SELECT doc FROM entities WHERE session_id = ? ORDER BY seq DESC`, t.sid())
}

// PutEntity puts an entity first, replacing the one of the same type and
// id.
func (t *tx) PutEntity(e abi.Entity) error {
	if _, err := t.exec(`DELETE FROM entities WHERE session_id = ? AND type = ? AND id = ?`, t.sid(), e.Type, e.ID); err != nil {
		return wrap("entity", err)
	}
	seq, err := t.nextSeq("entities", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO entities (session_id, type, id, seq, doc) VALUES (?, ?, ?, ?, ?)`,
		t.sid(), e.Type, e.ID, seq, marshal(e))
	return wrap("entity", err)
}

func (t *tx) Fingerprints(nodeID string) ([]abi.FingerprintRecord, error) {
	return docs[abi.FingerprintRecord](t, `SELECT doc FROM fingerprints WHERE session_id = ? AND node_id = ? ORDER BY seq`, t.sid(), nodeID)
}

func (t *tx) AddFingerprint(nodeID string, r abi.FingerprintRecord) error {
	seq, err := t.nextSeq("fingerprints", " AND node_id = ?", nodeID)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO fingerprints (session_id, node_id, seq, doc) VALUES (?, ?, ?, ?)`, t.sid(), nodeID, seq, marshal(r))
	return wrap("fingerprint", err)
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

func (t *tx) Shared(taskID string) (map[string]json.RawMessage, error) {
	return t.values(`SELECT key, value FROM task_shared WHERE session_id = ? AND task_id = ?`, t.sid(), taskID)
}

func (t *tx) SetShared(taskID, key string, v json.RawMessage) error {
	_, err := t.exec(`INSERT INTO task_shared (session_id, task_id, key, value) VALUES (?, ?, ?, ?)
ON CONFLICT (session_id, task_id, key) DO UPDATE SET value = excluded.value`, t.sid(), taskID, key, string(v))
	return wrap("share "+key, err)
}

func (t *tx) Values() (map[string]json.RawMessage, error) {
	return t.values(`SELECT key, value FROM session_values WHERE session_id = ?`, t.sid())
}

func (t *tx) SetValue(key string, v json.RawMessage) error {
	_, err := t.exec(`INSERT INTO session_values (session_id, key, value) VALUES (?, ?, ?)
ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value`, t.sid(), key, string(v))
	return wrap("share "+key, err)
}

// UserMessages are the session's last max user messages, oldest first.
func (t *tx) UserMessages(max int) ([]string, error) {
	rows, err := t.query(`SELECT text FROM user_messages WHERE session_id = ? ORDER BY seq DESC LIMIT ?`, t.sid(), max)
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

func (t *tx) AddUserMessage(text string) error {
	seq, err := t.nextSeq("user_messages", "")
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO user_messages (session_id, seq, text) VALUES (?, ?, ?)`, t.sid(), seq, text)
	return wrap("user message", err)
}

func (t *tx) Messages(nodeID string) ([]model.Message, error) {
	return docs[model.Message](t, `SELECT doc FROM messages WHERE session_id = ? AND node_id = ? ORDER BY seq`, t.sid(), nodeID)
}

func (t *tx) AppendMessages(nodeID string, msgs []model.Message) error {
	seq, err := t.nextSeq("messages", " AND node_id = ?", nodeID)
	if err != nil {
		return err
	}
	for i, m := range msgs {
		if _, err := t.exec(`INSERT INTO messages (session_id, node_id, seq, doc) VALUES (?, ?, ?, ?)`,
			t.sid(), nodeID, seq+int64(i), marshal(m)); err != nil {
			return wrap("messages of node "+nodeID, err)
		}
	}
	return nil
}

func (t *tx) FollowUps(taskID string) ([]abi.FollowUp, error) {
	return docs[abi.FollowUp](t, `SELECT doc FROM followups WHERE session_id = ? AND task_id = ? ORDER BY seq`, t.sid(), taskID)
}

func (t *tx) AddFollowUp(taskID string, f abi.FollowUp) error {
	seq, err := t.nextSeq("followups", " AND task_id = ?", taskID)
	if err != nil {
		return err
	}
	_, err = t.exec(`INSERT INTO followups (session_id, task_id, seq, doc) VALUES (?, ?, ?, ?)`, t.sid(), taskID, seq, marshal(f))
	return wrap("follow-up of task "+taskID, err)
}

func (t *tx) CallArgs(taskID, callID string) (json.RawMessage, bool, error) {
	var args string
	err := t.row(`SELECT args FROM write_calls WHERE session_id = ? AND task_id = ? AND call_id = ?`, t.sid(), taskID, callID).Scan(&args)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("call "+callID, err)
	}
	return json.RawMessage(args), true, nil
}

func (t *tx) PutCallArgs(taskID, callID string, args json.RawMessage) error {
	_, err := t.exec(`INSERT INTO write_calls (session_id, task_id, call_id, args) VALUES (?, ?, ?, ?)
ON CONFLICT (session_id, task_id, call_id) DO UPDATE SET args = excluded.args`, t.sid(), taskID, callID, string(args))
	return wrap("record call "+callID, err)
}
