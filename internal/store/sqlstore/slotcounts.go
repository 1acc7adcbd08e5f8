package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

var _ store.SlotCounters = (*DB)(nil)

// PutSlotCounts replaces what an instance last wrote of each generation
// (store.SlotCounters), and drops the counts of generations older than
// their slot's oldest kept one, in one transaction.
func (s *DB) PutSlotCounts(ctx context.Context, cs []store.SlotCounts) error {
	for _, c := range cs {
		if err := store.CheckSlotCounts(c); err != nil {
			return err
		}
	}
	if len(cs) == 0 {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("sqlstore: put slot counts: %w", err) }
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	const q = `INSERT INTO slot_counts (slot, number, digest, instance, calls, latency_ns, latency, outcomes, probes, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (slot, number, digest, instance) DO UPDATE SET calls = excluded.calls, latency_ns = excluded.latency_ns,
        latency = excluded.latency, outcomes = excluded.outcomes, probes = excluded.probes, updated_at = excluded.updated_at`
	slots := map[string]bool{}
	for _, c := range cs {
		latency, err := json.Marshal(c.Latency)
		if err != nil {
			return fail(err)
		}
		outcomes, err := json.Marshal(c.Outcomes)
		if err != nil {
			return fail(err)
		}
		if c.Latency == nil {
			latency = []byte("[]")
		}
		if c.Outcomes == nil {
			outcomes = []byte("{}")
		}
		if _, err := tx.ExecContext(ctx, s.rebind(q), text(c.Slot), int64(c.Number), text(c.Digest), text(c.Instance),
			int64(c.Calls), int64(c.TotalLatency), string(latency), string(outcomes), int64(c.Probes),
			c.Updated.UTC().Format(generationTime)); err != nil {
			return fail(fmt.Errorf("slot %s generation %d: %w", c.Slot, c.Number, err))
		}
		slots[c.Slot] = true
	}
	for slot := range slots {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM slot_counts WHERE slot = ?
    AND number < (SELECT MIN(number) FROM slot_generations WHERE slot = ?)`), text(slot), text(slot)); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}

// SlotCounts lists the counts of a slot's generations (store.SlotCounters).
func (s *DB) SlotCounts(ctx context.Context, slot string) ([]store.SlotCounts, error) {
	const q = `SELECT slot, number, digest, instance, calls, latency_ns, latency, outcomes, probes, updated_at
    FROM slot_counts WHERE slot = ? ORDER BY number, digest, instance`
	fail := func(err error) ([]store.SlotCounts, error) {
		return nil, fmt.Errorf("sqlstore: counts of slot %s: %w", slot, err)
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(q), slot)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	out := []store.SlotCounts{}
	for rows.Next() {
		var (
			c                            store.SlotCounts
			number, calls, nanos, probes int64
			latency, outcomes, updatedAt string
		)
		if err := rows.Scan(&c.Slot, &number, &c.Digest, &c.Instance, &calls, &nanos, &latency, &outcomes, &probes, &updatedAt); err != nil {
			return fail(err)
		}
		c.Number, c.Calls, c.TotalLatency, c.Probes = uint64(number), uint64(calls), time.Duration(nanos), uint64(probes)
		if err := json.Unmarshal([]byte(latency), &c.Latency); err != nil {
			return fail(fmt.Errorf("latency %q: %w", latency, err))
		}
		if err := json.Unmarshal([]byte(outcomes), &c.Outcomes); err != nil {
			return fail(fmt.Errorf("outcomes %q: %w", outcomes, err))
		}
		if c.Updated, err = time.Parse(generationTime, updatedAt); err != nil {
			return fail(fmt.Errorf("updated_at %q: %w", updatedAt, err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}
