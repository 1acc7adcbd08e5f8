package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
)

// Store is the durable state.Store of one session: the state's rules
// (state.Rules) over the session's rows in the database.
type Store struct {
	*state.Rules
}

var _ state.Store = (*Store)(nil)

// Session returns the Store of the session opt names, creating the session
// if the database has none by that id. The options are the same as
// state.Memory's, with the same defaults; they configure the store, they
// are not state, and a later Session call may pass others.
func (s *DB) Session(ctx context.Context, opt state.Options) (*Store, error) {
	if opt.SessionID == "" {
		return nil, fmt.Errorf("sqlstore: session: empty session id")
	}
	opt = opt.WithDefaults()
	q := `INSERT INTO sessions (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`
	if _, err := s.db.ExecContext(ctx, s.rebind(q), opt.SessionID, opt.Now().UTC().Format(time.RFC3339)); err != nil {
		return nil, fmt.Errorf("sqlstore: session %s: %w", opt.SessionID, err)
	}
	r, err := state.NewRules(opt, &storage{db: s, sid: opt.SessionID})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: session %s: %w", opt.SessionID, err)
	}
	return &Store{Rules: r}, nil
}

// storage is the state.Storage of one session: its rows, read and written
// in one transaction per call.
type storage struct {
	db  *DB
	sid string
}

// Update runs fn in a transaction that holds the session's write lock and
// commits when fn returns nil.
func (s *storage) Update(fn func(state.Tx) error) error { return s.run(true, fn) }

// View runs fn in a transaction that sees one snapshot of the session.
func (s *storage) View(fn func(state.Tx) error) error { return s.run(false, fn) }

func (s *storage) run(lock bool, fn func(state.Tx) error) error {
	ctx := context.Background()
	var opts *sql.TxOptions
	if !lock && s.db.dialect == Postgres {
		// One snapshot for every query of a read, whatever other
		// instances commit meanwhile.
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	sqlTx, err := s.db.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("sqlstore: begin: %w", err)
	}
	defer sqlTx.Rollback()
	t := &tx{s: s, tx: sqlTx}
	if lock {
		q := `SELECT id FROM sessions WHERE id = ?`
		if s.db.dialect == Postgres {
			q += ` FOR UPDATE`
		}
		var id string
		if err := t.row(q, s.sid).Scan(&id); err != nil {
			return fmt.Errorf("sqlstore: session %s: %w", s.sid, err)
		}
	}
	if err := fn(t); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	return nil
}

// tx is one transaction of a session's storage, with its queries rebound.
type tx struct {
	s  *storage
	tx *sql.Tx
}

var _ state.Tx = (*tx)(nil)

func (t *tx) sid() string { return t.s.sid }

func (t *tx) exec(q string, args ...any) (sql.Result, error) {
	return t.tx.Exec(t.s.db.rebind(q), args...)
}

func (t *tx) query(q string, args ...any) (*sql.Rows, error) {
	return t.tx.Query(t.s.db.rebind(q), args...)
}

func (t *tx) row(q string, args ...any) *sql.Row {
	return t.tx.QueryRow(t.s.db.rebind(q), args...)
}

// nextSeq is the next position in an ordered list of the session; the
// session's write lock makes it unique.
func (t *tx) nextSeq(table, where string, args ...any) (int64, error) {
	var n int64
	err := t.row(`SELECT COALESCE(MAX(seq), 0) + 1 FROM `+table+` WHERE session_id = ?`+where,
		append([]any{t.sid()}, args...)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: %s: %w", table, err)
	}
	return n, nil
}

func marshal(v any) string {
	b, err := abi.Marshal(v)
	if err != nil {
		// Every value stored here is built from JSON-safe types.
		panic(fmt.Sprintf("sqlstore: marshal %T: %v", v, err))
	}
	return string(b)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlstore: %s: %w", what, err)
}
