package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

var _ store.GenerationLog = (*DB)(nil)

// generationTime is the layout of plugin_generations.recorded_at: UTC to
// the nanosecond with a fixed number of digits.
const generationTime = "2006-01-02T15:04:05.000000000Z"

// RecordGeneration appends a slot's generation record (store.GenerationLog).
// A record without a slot or with an unknown event is refused with
// store.ErrInvalid. Text is stored as valid UTF-8 without NUL bytes, as
// PostgreSQL requires.
func (s *DB) RecordGeneration(ctx context.Context, r store.GenerationRecord) error {
	switch {
	case r.Slot == "":
		return fmt.Errorf("sqlstore: record generation: no slot: %w", store.ErrInvalid)
	case r.Event != store.GenerationInstalled && r.Event != store.GenerationRefused && r.Event != store.GenerationRolledBack:
		return fmt.Errorf("sqlstore: record generation of %s: event %q: %w", r.Slot, r.Event, store.ErrInvalid)
	}
	const q = `INSERT INTO plugin_generations (slot, event, generation, ref, digest, reason, origin, file, instance, recorded_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := s.db.ExecContext(ctx, s.rebind(q), text(r.Slot), string(r.Event), int64(r.Number), text(r.Ref),
		text(r.Digest), text(r.Reason), text(r.Origin), text(r.File), text(r.Instance),
		r.Time.UTC().Format(generationTime)); err != nil {
		return fmt.Errorf("sqlstore: record generation of %s: %w", r.Slot, err)
	}
	return nil
}

// Generations lists a slot's records in the order they were added
// (store.GenerationLog).
func (s *DB) Generations(ctx context.Context, slot string) ([]store.GenerationRecord, error) {
	const q = `SELECT slot, event, generation, ref, digest, reason, origin, file, instance, recorded_at
    FROM plugin_generations WHERE slot = ? ORDER BY id`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), slot)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: generations of %s: %w", slot, err)
	}
	defer rows.Close()
	out := []store.GenerationRecord{}
	for rows.Next() {
		var (
			r      store.GenerationRecord
			event  string
			number int64
			at     string
		)
		if err := rows.Scan(&r.Slot, &event, &number, &r.Ref, &r.Digest, &r.Reason, &r.Origin, &r.File, &r.Instance, &at); err != nil {
			return nil, fmt.Errorf("sqlstore: generations of %s: %w", slot, err)
		}
		r.Event, r.Number = store.GenerationEvent(event), uint64(number)
		if r.Time, err = time.Parse(generationTime, at); err != nil {
			return nil, fmt.Errorf("sqlstore: generations of %s: recorded_at %q: %w", slot, at, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: generations of %s: %w", slot, err)
	}
	return out, nil
}
