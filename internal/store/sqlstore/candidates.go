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

const slotCandidateSelect = `SELECT slot, number, digest, config, ref, origin, file, instance, rolled_from, created_at,
    state, deadline, refused_by, code, reason, decided_at FROM slot_candidates`

func scanSlotCandidate(r rowScanner) (store.SlotCandidate, error) {
	var (
		c                          store.SlotCandidate
		number, from               int64
		config, at, deadline, when string
	)
	if err := r.Scan(&c.Slot, &number, &c.Digest, &config, &c.Ref, &c.Origin, &c.File, &c.Instance, &from, &at,
		&c.State, &deadline, &c.By, &c.Code, &c.Reason, &when); err != nil {
		return c, err
	}
	c.Number, c.From = uint64(number), uint64(from)
	if config != "" {
		c.Config = json.RawMessage(config)
	}
	var err error
	if c.Time, err = time.Parse(generationTime, at); err != nil {
		return c, fmt.Errorf("created_at %q: %w", at, err)
	}
	if c.Deadline, err = time.Parse(generationTime, deadline); err != nil {
		return c, fmt.Errorf("deadline %q: %w", deadline, err)
	}
	if when != "" {
		if c.Decided, err = time.Parse(generationTime, when); err != nil {
			return c, fmt.Errorf("decided_at %q: %w", when, err)
		}
	}
	return c, nil
}

func (s *DB) slotCandidates(ctx context.Context, what, q string, args ...any) ([]store.SlotCandidate, error) {
	return queryAll(ctx, s, what, scanSlotCandidate, q, args...)
}

// beginSlots begins a transaction that numbers or decides a slot's
// generations: on PostgreSQL it holds the slots' lock, which serialises
// such transactions across instances.
func (s *DB) beginSlots(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil || s.dialect != Postgres {
		return tx, err
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE slot_generations IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// ProposeSlotGeneration records a slot's candidate (store.SlotControl):
// numbered under the same lock as PutSlotGeneration, and notified to the
// instances listening at the commit.
func (s *DB) ProposeSlotGeneration(ctx context.Context, c store.SlotCandidate, module []byte) (store.SlotCandidate, bool, error) {
	if err := checkGeneration("propose slot generation", c.SlotGeneration); err != nil {
		return store.SlotCandidate{}, false, err
	}
	fail := func(err error) (store.SlotCandidate, bool, error) {
		return store.SlotCandidate{}, false, fmt.Errorf("sqlstore: propose slot generation %s: %w", c.Slot, err)
	}
	tx, err := s.beginSlots(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	pending, err := scanSlotCandidate(tx.QueryRowContext(ctx, s.rebind(slotCandidateSelect+` WHERE slot = ? AND state = ?`), c.Slot, store.CandidatePreparing))
	hasPending := err == nil
	switch {
	case hasPending:
		if pending.Digest == c.Digest && store.SameConfig(pending.Config, c.Config) {
			return pending, false, nil
		}
	case !errors.Is(err, sql.ErrNoRows):
		return fail(err)
	default:
		desired, err := scanSlotGeneration(tx.QueryRowContext(ctx, s.rebind(slotGenerationSelect+` WHERE slot = ? ORDER BY number DESC LIMIT 1`), c.Slot))
		switch {
		case err == nil:
			if desired.Digest == c.Digest && store.SameConfig(desired.Config, c.Config) {
				return store.SlotCandidate{SlotGeneration: desired, State: store.CandidateDesired, Decided: desired.Time}, false, nil
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fail(err)
		}
	}
	if module == nil {
		var one int
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT 1 FROM slot_modules WHERE digest = ?`), c.Digest).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fail(fmt.Errorf("module %s: %w", c.Digest, store.ErrNotFound))
		} else if err != nil {
			return fail(err)
		}
	} else if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO slot_modules (digest, module) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING`), c.Digest, module); err != nil {
		return fail(err)
	}
	if c.Number, err = s.nextSlotNumber(ctx, tx, c.Slot); err != nil {
		return fail(err)
	}
	c.State, c.By, c.Code, c.Reason, c.Decided = store.CandidatePreparing, "", "", "", time.Time{}
	if hasPending {
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE slot_candidates SET state = ?, reason = ?, decided_at = ? WHERE slot = ? AND number = ?`),
			store.CandidateSuperseded, fmt.Sprintf("superseded by generation %d", c.Number), c.Time.UTC().Format(generationTime),
			c.Slot, int64(pending.Number)); err != nil {
			return fail(err)
		}
	}
	const q = `INSERT INTO slot_candidates (slot, number, digest, config, ref, origin, file, instance, rolled_from, created_at,
    state, deadline, refused_by, code, reason, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', '', '')`
	if _, err := tx.ExecContext(ctx, s.rebind(q), text(c.Slot), int64(c.Number), text(c.Digest), configText(c.Config), text(c.Ref),
		text(c.Origin), text(c.File), text(c.Instance), int64(c.From), c.Time.UTC().Format(generationTime),
		c.State, c.Deadline.UTC().Format(generationTime)); err != nil {
		return fail(err)
	}
	if c.Number > store.KeptSlotGenerations {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM slot_candidates WHERE slot = ? AND number <= ? AND state <> ?`),
			c.Slot, int64(c.Number-store.KeptSlotGenerations), store.CandidatePreparing); err != nil {
			return fail(err)
		}
	}
	if hasPending {
		if err := dropSlotModules(ctx, tx); err != nil {
			return fail(err)
		}
	}
	if err := s.notifySlot(ctx, tx, c.Slot); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	if store.SameConfig(c.Config, nil) {
		c.Config = nil
	}
	return c, true, nil
}

// PendingSlotCandidates lists the candidates being prepared
// (store.SlotControl).
func (s *DB) PendingSlotCandidates(ctx context.Context) ([]store.SlotCandidate, error) {
	return s.slotCandidates(ctx, "pending slot candidates", slotCandidateSelect+` WHERE state = ? ORDER BY slot`, store.CandidatePreparing)
}

// SlotCandidates lists a slot's kept candidates (store.SlotControl).
func (s *DB) SlotCandidates(ctx context.Context, slot string) ([]store.SlotCandidate, error) {
	return s.slotCandidates(ctx, "candidates of slot "+slot, slotCandidateSelect+` WHERE slot = ? ORDER BY number`, slot)
}

// DecideSlotCandidate decides a candidate being prepared
// (store.SlotControl): the state changes only from preparing, so that of
// instances deciding at once one does.
func (s *DB) DecideSlotCandidate(ctx context.Context, slot string, number uint64, d store.SlotDecision) (store.SlotCandidate, bool, error) {
	what := fmt.Sprintf("sqlstore: decide slot candidate %s@%d", slot, number)
	if d.State != store.CandidateDesired && d.State != store.CandidateRefused {
		return store.SlotCandidate{}, false, fmt.Errorf("%s: state %q: %w", what, d.State, store.ErrInvalid)
	}
	fail := func(err error) (store.SlotCandidate, bool, error) {
		return store.SlotCandidate{}, false, fmt.Errorf("%s: %w", what, err)
	}
	tx, err := s.beginSlots(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	get := func() (store.SlotCandidate, error) {
		return scanSlotCandidate(tx.QueryRowContext(ctx, s.rebind(slotCandidateSelect+` WHERE slot = ? AND number = ?`), slot, int64(number)))
	}
	c, err := get()
	if errors.Is(err, sql.ErrNoRows) {
		return fail(store.ErrNotFound)
	} else if err != nil {
		return fail(err)
	}
	if c.State != store.CandidatePreparing {
		return c, false, nil
	}
	at := d.Time.UTC().Format(generationTime)
	decided := true
	if d.State == store.CandidateRefused {
		_, err = tx.ExecContext(ctx, s.rebind(`UPDATE slot_candidates SET state = ?, refused_by = ?, code = ?, reason = ?, decided_at = ? WHERE slot = ? AND number = ?`),
			store.CandidateRefused, text(d.By), text(d.Code), text(d.Reason), at, slot, int64(number))
		if err == nil {
			err = dropSlotModules(ctx, tx) // its module, unless a kept generation's
		}
		if err == nil {
			err = s.notifySlot(ctx, tx, slot)
		}
	} else {
		var last int64
		if err = tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(MAX(number), 0) FROM slot_generations WHERE slot = ?`), slot).Scan(&last); err != nil {
			return fail(err)
		}
		if uint64(last) >= number {
			// A generation written past it meanwhile (a first start).
			decided = false
			_, err = tx.ExecContext(ctx, s.rebind(`UPDATE slot_candidates SET state = ?, reason = ?, decided_at = ? WHERE slot = ? AND number = ?`),
				store.CandidateSuperseded, fmt.Sprintf("superseded by generation %d", last), at, slot, int64(number))
		} else {
			_, err = tx.ExecContext(ctx, s.rebind(`UPDATE slot_candidates SET state = ?, ref = ?, decided_at = ? WHERE slot = ? AND number = ?`),
				store.CandidateDesired, text(d.Ref), at, slot, int64(number))
			if err == nil {
				c.Ref = d.Ref
				err = s.insertSlotGeneration(ctx, tx, c.SlotGeneration)
			}
		}
	}
	if err != nil {
		return fail(err)
	}
	if c, err = get(); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return c, decided, nil
}
