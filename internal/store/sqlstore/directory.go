package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// DB is the service's store.Directory too: sessions, API tasks,
// approvals, events and instance leases live in the same database as the
// sessions' runtime state (migration 0002).
var _ store.Directory = (*DB)(nil)

func (s *DB) exec(ctx context.Context, what, q string, args ...any) (sql.Result, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return res, nil
}

// inserted reports whether an INSERT … ON CONFLICT DO NOTHING wrote a row.
func inserted(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlstore: %s: %w", what, store.ErrExists)
	}
	return nil
}

func validDoc(what string, doc json.RawMessage) error {
	if !json.Valid(doc) {
		return fmt.Errorf("sqlstore: %s: document is not JSON: %w", what, store.ErrInvalid)
	}
	return nil
}

func (s *DB) CreateSession(ctx context.Context, ss store.Session) error {
	if ss.ID == "" || ss.Tenant == "" || ss.Owner == "" {
		return fmt.Errorf("sqlstore: create session: id, tenant and owner are required: %w", store.ErrInvalid)
	}
	what := "session " + ss.ID
	res, err := s.exec(ctx, what, `INSERT INTO api_sessions (id, tenant, created_at, owner) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		ss.ID, ss.Tenant, ss.Created.UTC().Truncate(time.Millisecond).Format(generationTime), ss.Owner)
	if err != nil {
		return err
	}
	return inserted(res, what)
}

func (s *DB) LookupSession(ctx context.Context, id string) (store.Session, error) {
	ss := store.Session{ID: id}
	var created string
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT tenant, created_at, owner FROM api_sessions WHERE id = ?`), id).
		Scan(&ss.Tenant, &created, &ss.Owner)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("sqlstore: session %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("sqlstore: session %s: %w", id, err)
	}
	if ss.Created, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return store.Session{}, fmt.Errorf("sqlstore: session %s: created_at: %w", id, err)
	}
	ss.Created = ss.Created.Truncate(time.Millisecond)
	return ss, nil
}

func (s *DB) Sessions(ctx context.Context, tenant string, after store.Cursor, limit int) ([]store.Session, error) {
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, tenant, created_at, owner FROM api_sessions WHERE tenant = ?`
	args := []any{tenant}
	if after.ID != "" {
		at := after.Created.UTC().Format(generationTime)
		q += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, at, at, after.ID)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sessions of %s: %w", tenant, err)
	}
	defer rows.Close()
	out := []store.Session{}
	for rows.Next() {
		var ss store.Session
		var created string
		if err := rows.Scan(&ss.ID, &ss.Tenant, &created, &ss.Owner); err != nil {
			return nil, fmt.Errorf("sqlstore: sessions of %s: %w", tenant, err)
		}
		if ss.Created, err = time.Parse(time.RFC3339Nano, created); err != nil {
			return nil, fmt.Errorf("sqlstore: session %s: created_at: %w", ss.ID, err)
		}
		ss.Created = ss.Created.Truncate(time.Millisecond)
		out = append(out, ss)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: sessions of %s: %w", tenant, err)
	}
	return out, nil
}

// Claim is one conditional UPDATE: whichever instance's statement the
// database runs first while the owner is dead wins, the others see a live
// owner.
func (s *DB) Claim(ctx context.Context, id, owner string, now time.Time) (string, error) {
	var prev string
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT owner FROM api_sessions WHERE id = ?`), id).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("sqlstore: session %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("sqlstore: claim session %s: %w", id, err)
	}
	if prev == owner {
		return prev, nil
	}
	res, err := s.exec(ctx, "claim session "+id, `UPDATE api_sessions SET owner = ? WHERE id = ? AND owner = ?
  AND NOT EXISTS (SELECT 1 FROM instances WHERE instances.id = ? AND instances.lease_until > ?)`,
		owner, id, prev, prev, now.UnixMilli())
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", fmt.Errorf("sqlstore: claim session %s: %w", id, err)
	} else if n == 0 {
		// The owner is alive, or another instance claimed it meanwhile.
		var cur string
		if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT owner FROM api_sessions WHERE id = ?`), id).Scan(&cur); err != nil {
			return "", fmt.Errorf("sqlstore: claim session %s: %w", id, err)
		}
		return cur, fmt.Errorf("sqlstore: session %s: owner %s: %w", id, cur, store.ErrOwned)
	}
	return prev, nil
}

func (s *DB) PutTask(ctx context.Context, session string, t store.Doc) error {
	if t.ID == "" {
		return fmt.Errorf("sqlstore: put task: id is required: %w", store.ErrInvalid)
	}
	if err := validDoc("task "+t.ID, t.Doc); err != nil {
		return err
	}
	var head struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(t.Doc, &head)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: task %s: %w", t.ID, err)
	}
	defer tx.Rollback()
	// The insert writes nothing for an unknown session; the session's row
	// keeps its latest task's status (0010), in the same transaction.
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO api_tasks (session_id, id, seq, doc)
SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM api_sessions WHERE id = ?)
ON CONFLICT (session_id, id) DO UPDATE SET seq = excluded.seq, doc = excluded.doc`), session, t.ID, t.Seq, string(t.Doc), session)
	if err != nil {
		return fmt.Errorf("sqlstore: task %s: %w", t.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlstore: task %s: %w", t.ID, err)
	} else if n == 0 {
		return fmt.Errorf("sqlstore: session %s: %w", session, store.ErrNotFound)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE api_sessions SET latest_seq = ?, latest_task = ?, status = ?
WHERE id = ? AND latest_seq <= ?`), t.Seq, t.ID, head.Status, session, t.Seq); err != nil {
		return fmt.Errorf("sqlstore: task %s: session status: %w", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: task %s: %w", t.ID, err)
	}
	return nil
}

func (s *DB) docs(ctx context.Context, what, q string, args ...any) ([]store.Doc, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rows.Close()
	out := []store.Doc{}
	for rows.Next() {
		var d store.Doc
		var doc string
		if err := rows.Scan(&d.ID, &d.Seq, &doc); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		d.Doc = json.RawMessage(doc)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return out, nil
}

func (s *DB) Tasks(ctx context.Context, session string) ([]store.Doc, error) {
	return s.docs(ctx, "tasks of session "+session, `SELECT id, seq, doc FROM api_tasks WHERE session_id = ? ORDER BY seq, id`, session)
}

// AddApproval numbers a session's approvals in the order they are added
// (seq); a session adds them one at a time, under its owner's run lock.
func (s *DB) AddApproval(ctx context.Context, a store.Approval) error {
	if a.ID == "" || a.Tenant == "" || a.Session == "" || a.Status == "" {
		return fmt.Errorf("sqlstore: add approval: id, tenant, session and status are required: %w", store.ErrInvalid)
	}
	if err := validDoc("approval "+a.ID, a.Doc); err != nil {
		return err
	}
	what := "approval " + a.ID
	res, err := s.exec(ctx, what, `INSERT INTO api_approvals (id, tenant, session_id, node_id, seq, status, doc)
SELECT ?, ?, ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ? FROM api_approvals WHERE session_id = ?
ON CONFLICT (id) DO NOTHING`, a.ID, a.Tenant, a.Session, a.Node, a.Status, string(a.Doc), a.Session)
	if err != nil {
		return err
	}
	return inserted(res, what)
}

func (s *DB) approvals(ctx context.Context, what, where string, arg string) ([]store.Approval, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id, tenant, session_id, node_id, status, doc FROM api_approvals WHERE `+where), arg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rows.Close()
	out := []store.Approval{}
	for rows.Next() {
		var a store.Approval
		var doc string
		if err := rows.Scan(&a.ID, &a.Tenant, &a.Session, &a.Node, &a.Status, &doc); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		a.Doc = json.RawMessage(doc)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return out, nil
}

func (s *DB) Approval(ctx context.Context, id string) (store.Approval, error) {
	as, err := s.approvals(ctx, "approval "+id, `id = ?`, id)
	if err != nil {
		return store.Approval{}, err
	}
	if len(as) == 0 {
		return store.Approval{}, fmt.Errorf("sqlstore: approval %s: %w", id, store.ErrNotFound)
	}
	return as[0], nil
}

func (s *DB) Approvals(ctx context.Context, session string) ([]store.Approval, error) {
	return s.approvals(ctx, "approvals of session "+session, `session_id = ? ORDER BY seq`, session)
}

func (s *DB) MoveApproval(ctx context.Context, id, from, to string, doc json.RawMessage) (bool, error) {
	if err := validDoc("approval "+id, doc); err != nil {
		return false, err
	}
	res, err := s.exec(ctx, "approval "+id, `UPDATE api_approvals SET status = ?, doc = ? WHERE id = ? AND status = ?`, to, string(doc), id, from)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlstore: approval %s: %w", id, err)
	}
	if n == 0 {
		if _, err := s.Approval(ctx, id); err != nil {
			return false, err
		}
	}
	return n == 1, nil
}

func (s *DB) AppendEvent(ctx context.Context, session string, e store.Doc) error {
	what := fmt.Sprintf("session %s: event %d", session, e.Seq)
	if err := validDoc(what, e.Doc); err != nil {
		return err
	}
	var head struct {
		Time string `json:"time"`
	}
	_ = json.Unmarshal(e.Doc, &head)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer tx.Rollback()
	// One insert in the common case; which of the two reasons a row was
	// not written is looked up only then. The session's row keeps the time
	// of its last event (0010), in the same transaction.
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO api_events (session_id, seq, doc)
SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM api_sessions WHERE id = ?)
ON CONFLICT (session_id, seq) DO NOTHING`), session, e.Seq, string(e.Doc), session)
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	} else if n == 0 {
		tx.Rollback()
		if _, err := s.LookupSession(ctx, session); err != nil {
			return err
		}
		return fmt.Errorf("sqlstore: %s: %w", what, store.ErrExists)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE api_sessions SET last_at = ? WHERE id = ?`), head.Time, session); err != nil {
		return fmt.Errorf("sqlstore: %s: last activity: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return nil
}

func (s *DB) Events(ctx context.Context, session string, after int64) ([]store.Doc, error) {
	return s.docs(ctx, "events of session "+session, `SELECT '', seq, doc FROM api_events WHERE session_id = ? AND seq > ? ORDER BY seq`, session, after)
}

func (s *DB) Heartbeat(ctx context.Context, instance string, until time.Time) error {
	if instance == "" {
		return fmt.Errorf("sqlstore: heartbeat: instance is required: %w", store.ErrInvalid)
	}
	_, err := s.exec(ctx, "heartbeat of "+instance, `INSERT INTO instances (id, started_at, lease_until) VALUES (?, ?, ?)
ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until`, instance, time.Now().UTC().Format(time.RFC3339), until.UnixMilli())
	return err
}

// Instances lists every instance that ever held a lease, by id, with its
// lease (zero once released) and the sessions it owns.
func (s *DB) Instances(ctx context.Context) ([]store.Instance, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT i.id, i.lease_until, (SELECT COUNT(*) FROM api_sessions a WHERE a.owner = i.id), i.addr
FROM instances i ORDER BY i.id`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: instances: %w", err)
	}
	defer rows.Close()
	out := []store.Instance{}
	for rows.Next() {
		var in store.Instance
		var until int64
		if err := rows.Scan(&in.ID, &until, &in.Sessions, &in.Addr); err != nil {
			return nil, fmt.Errorf("sqlstore: instances: %w", err)
		}
		if until > 0 {
			in.LeaseUntil = time.UnixMilli(until).UTC()
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: instances: %w", err)
	}
	return out, nil
}

func (s *DB) Release(ctx context.Context, instance string) error {
	_, err := s.exec(ctx, "release "+instance, `UPDATE instances SET lease_until = 0 WHERE id = ?`, instance)
	return err
}

func (s *DB) ReleaseOthers(ctx context.Context, instance string) error {
	_, err := s.exec(ctx, "release all but "+instance, `UPDATE instances SET lease_until = 0 WHERE id <> ?`, instance)
	return err
}

// Advertise writes the address beside the lease; an instance that has not
// beaten yet gets a row with no lease.
func (s *DB) Advertise(ctx context.Context, instance, addr string) error {
	if instance == "" || addr == "" {
		return fmt.Errorf("sqlstore: advertise: instance and address are required: %w", store.ErrInvalid)
	}
	_, err := s.exec(ctx, "address of "+instance, `INSERT INTO instances (id, started_at, lease_until, addr) VALUES (?, ?, 0, ?)
ON CONFLICT (id) DO UPDATE SET addr = excluded.addr`, instance, time.Now().UTC().Format(time.RFC3339), addr)
	return err
}

func (s *DB) LookupInstance(ctx context.Context, instance string) (store.Instance, error) {
	in := store.Instance{ID: instance}
	var until int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT lease_until, addr FROM instances WHERE id = ?`), instance).Scan(&until, &in.Addr)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Instance{}, fmt.Errorf("sqlstore: instance %s: %w", instance, store.ErrNotFound)
	}
	if err != nil {
		return store.Instance{}, fmt.Errorf("sqlstore: instance %s: %w", instance, err)
	}
	if until > 0 {
		in.LeaseUntil = time.UnixMilli(until).UTC()
	}
	return in, nil
}
