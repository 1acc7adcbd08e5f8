package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentwarden/warden/internal/store"
)

var _ store.SlotControl = (*DB)(nil)

// slotChannel is the PostgreSQL notification channel of new desired
// generations; the payload is the slot's name.
const slotChannel = "warden_slots"

// checkGeneration refuses a generation or candidate without a slot, digest
// or origin, or with a config that is not JSON; what names the operation.
func checkGeneration(what string, g store.SlotGeneration) error {
	if g.Slot == "" || g.Digest == "" || g.Origin == "" {
		return fmt.Errorf("sqlstore: %s: slot, digest and origin are required: %w", what, store.ErrInvalid)
	}
	if len(g.Config) > 0 && !json.Valid(g.Config) {
		return fmt.Errorf("sqlstore: %s %s: config is not JSON: %w", what, g.Slot, store.ErrInvalid)
	}
	return nil
}

// PutSlotGeneration makes g the slot's desired generation
// (store.SlotControl). On PostgreSQL the slot's table is locked for the
// transaction, so two instances installing at once number their
// generations one after the other, and the commit notifies every
// instance listening.
func (s *DB) PutSlotGeneration(ctx context.Context, g store.SlotGeneration, module []byte, onlyFirst bool) (store.SlotGeneration, bool, error) {
	if err := checkGeneration("put slot generation", g); err != nil {
		return store.SlotGeneration{}, false, err
	}
	fail := func(err error) (store.SlotGeneration, bool, error) {
		return store.SlotGeneration{}, false, fmt.Errorf("sqlstore: put slot generation %s: %w", g.Slot, err)
	}
	tx, err := s.beginSlots(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	last, err := scanSlotGeneration(tx.QueryRowContext(ctx, s.rebind(slotGenerationSelect+` WHERE slot = ? ORDER BY number DESC LIMIT 1`), g.Slot))
	switch {
	case err == nil:
		if onlyFirst || (last.Digest == g.Digest && store.SameConfig(last.Config, g.Config)) {
			return last, false, nil
		}
	case !errors.Is(err, sql.ErrNoRows):
		return fail(err)
	}
	if g.Number, err = s.nextSlotNumber(ctx, tx, g.Slot); err != nil {
		return fail(err)
	}
	if module == nil {
		var one int
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT 1 FROM slot_modules WHERE digest = ?`), g.Digest).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fail(fmt.Errorf("module %s: %w", g.Digest, store.ErrNotFound))
		} else if err != nil {
			return fail(err)
		}
	} else if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO slot_modules (digest, module) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING`), g.Digest, module); err != nil {
		return fail(err)
	}
	if err := s.insertSlotGeneration(ctx, tx, g); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	if store.SameConfig(g.Config, nil) {
		g.Config = nil
	}
	return g, true, nil
}

// configText is a configuration as the slot tables keep it, empty for none.
func configText(c json.RawMessage) string {
	if store.SameConfig(c, nil) {
		return ""
	}
	return string(c)
}

// nextSlotNumber is one past every generation and candidate of a slot.
func (s *DB) nextSlotNumber(ctx context.Context, tx *sql.Tx, slot string) (uint64, error) {
	var n int64
	const q = `SELECT COALESCE(MAX(n), 0) FROM (SELECT number AS n FROM slot_generations WHERE slot = ?
    UNION ALL SELECT number FROM slot_candidates WHERE slot = ?) k`
	if err := tx.QueryRowContext(ctx, s.rebind(q), slot, slot).Scan(&n); err != nil {
		return 0, err
	}
	return uint64(n) + 1, nil
}

// insertSlotGeneration makes g its slot's desired generation: it keeps the
// newest KeptSlotGenerations, drops the modules nothing names any more,
// and notifies the instances listening on PostgreSQL (at the commit).
func (s *DB) insertSlotGeneration(ctx context.Context, tx *sql.Tx, g store.SlotGeneration) error {
	const q = `INSERT INTO slot_generations (slot, number, digest, config, ref, origin, file, instance, rolled_from, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := tx.ExecContext(ctx, s.rebind(q), text(g.Slot), int64(g.Number), text(g.Digest), configText(g.Config), text(g.Ref), text(g.Origin),
		text(g.File), text(g.Instance), int64(g.From), g.Time.UTC().Format(generationTime)); err != nil {
		return err
	}
	if g.Number > store.KeptSlotGenerations {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM slot_generations WHERE slot = ? AND number <= ?`),
			g.Slot, int64(g.Number-store.KeptSlotGenerations)); err != nil {
			return err
		}
		if err := dropSlotModules(ctx, tx); err != nil {
			return err
		}
	}
	return s.notifySlot(ctx, tx, g.Slot)
}

// dropSlotModules deletes the modules no kept generation and no candidate
// being prepared names.
func dropSlotModules(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM slot_modules WHERE digest NOT IN (SELECT digest FROM slot_generations)
    AND digest NOT IN (SELECT digest FROM slot_candidates WHERE state = '`+store.CandidatePreparing+`')`)
	return err
}

// notifySlot tells the instances listening on PostgreSQL, at the commit,
// that a slot changed.
func (s *DB) notifySlot(ctx context.Context, tx *sql.Tx, slot string) error {
	if s.dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, slotChannel, text(slot))
	return err
}

const slotGenerationSelect = `SELECT slot, number, digest, config, ref, origin, file, instance, rolled_from, created_at FROM slot_generations`

type rowScanner interface{ Scan(dest ...any) error }

func scanSlotGeneration(r rowScanner) (store.SlotGeneration, error) {
	var (
		g            store.SlotGeneration
		number, from int64
		config, at   string
	)
	if err := r.Scan(&g.Slot, &number, &g.Digest, &config, &g.Ref, &g.Origin, &g.File, &g.Instance, &from, &at); err != nil {
		return g, err
	}
	g.Number, g.From = uint64(number), uint64(from)
	if config != "" {
		g.Config = json.RawMessage(config)
	}
	var err error
	if g.Time, err = time.Parse(generationTime, at); err != nil {
		return g, fmt.Errorf("created_at %q: %w", at, err)
	}
	return g, nil
}

func (s *DB) slotGenerations(ctx context.Context, what, q string, args ...any) ([]store.SlotGeneration, error) {
	return queryAll(ctx, s, what, scanSlotGeneration, q, args...)
}

// queryAll runs q and scans each of its rows with scan; what names the
// query in its errors.
func queryAll[T any](ctx context.Context, s *DB, what string, scan func(rowScanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return out, nil
}

// DesiredSlots lists every slot's newest generation (store.SlotControl).
func (s *DB) DesiredSlots(ctx context.Context) ([]store.SlotGeneration, error) {
	return s.slotGenerations(ctx, "desired slots", slotGenerationSelect+
		` g WHERE number = (SELECT MAX(number) FROM slot_generations h WHERE h.slot = g.slot) ORDER BY slot`)
}

// SlotGenerations lists a slot's kept generations (store.SlotControl).
func (s *DB) SlotGenerations(ctx context.Context, slot string) ([]store.SlotGeneration, error) {
	return s.slotGenerations(ctx, "generations of slot "+slot, slotGenerationSelect+` WHERE slot = ? ORDER BY number`, slot)
}

// SlotModule returns a kept module by digest (store.SlotControl).
func (s *DB) SlotModule(ctx context.Context, digest string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT module FROM slot_modules WHERE digest = ?`), digest).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlstore: slot module %s: %w", digest, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: slot module %s: %w", digest, err)
	}
	return b, nil
}

// ReportSlot records an instance's report of a slot (store.SlotControl).
func (s *DB) ReportSlot(ctx context.Context, st store.SlotStatus) error {
	if st.Slot == "" || st.Instance == "" {
		return fmt.Errorf("sqlstore: report slot: slot and instance are required: %w", store.ErrInvalid)
	}
	const q = `INSERT INTO slot_status (slot, instance, serving, digest, since, refused, reason, prepared, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (slot, instance) DO UPDATE SET serving = excluded.serving, digest = excluded.digest, since = excluded.since,
        refused = excluded.refused, reason = excluded.reason, prepared = excluded.prepared, updated_at = excluded.updated_at`
	if _, err := s.db.ExecContext(ctx, s.rebind(q), text(st.Slot), text(st.Instance), int64(st.Serving), text(st.Digest),
		st.Since.UTC().Format(generationTime), int64(st.Refused), text(st.Reason), int64(st.Prepared), st.Updated.UTC().Format(generationTime)); err != nil {
		return fmt.Errorf("sqlstore: report slot %s: %w", st.Slot, err)
	}
	return nil
}

// SlotStatuses lists the instances' reports of a slot (store.SlotControl).
func (s *DB) SlotStatuses(ctx context.Context, slot string) ([]store.SlotStatus, error) {
	const q = `SELECT slot, instance, serving, digest, since, refused, reason, prepared, updated_at FROM slot_status WHERE slot = ? ORDER BY instance`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), slot)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: status of slot %s: %w", slot, err)
	}
	defer rows.Close()
	out := []store.SlotStatus{}
	for rows.Next() {
		var (
			st                         store.SlotStatus
			serving, refused, prepared int64
			since, updatedAt           string
		)
		if err := rows.Scan(&st.Slot, &st.Instance, &serving, &st.Digest, &since, &refused, &st.Reason, &prepared, &updatedAt); err != nil {
			return nil, fmt.Errorf("sqlstore: status of slot %s: %w", slot, err)
		}
		st.Serving, st.Refused, st.Prepared = uint64(serving), uint64(refused), uint64(prepared)
		if st.Since, err = time.Parse(generationTime, since); err != nil {
			return nil, fmt.Errorf("sqlstore: status of slot %s: since %q: %w", slot, since, err)
		}
		if st.Updated, err = time.Parse(generationTime, updatedAt); err != nil {
			return nil, fmt.Errorf("sqlstore: status of slot %s: updated_at %q: %w", slot, updatedAt, err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: status of slot %s: %w", slot, err)
	}
	return out, nil
}

// SlotChanges listens for new desired generations on PostgreSQL
// (LISTEN warden_slots on a connection of its own, taken again after a
// failure); SQLite cannot tell, and returns nil. A notification lost
// while the connection is down is made up for by the caller's polling.
func (s *DB) SlotChanges(ctx context.Context) <-chan struct{} {
	if s.dialect != Postgres {
		return nil
	}
	ch := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			_ = s.listen(ctx, ch)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return ch
}

func (s *DB) listen(ctx context.Context, ch chan<- struct{}) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqlstore: listen: driver connection %T", dc)
		}
		pc := sc.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+slotChannel); err != nil {
			return err
		}
		// A connection given back to the pool must not keep listening.
		defer pc.Exec(context.WithoutCancel(ctx), "UNLISTEN "+slotChannel) //nolint:errcheck
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return err
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
}
