package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/feedback"
)

var _ feedback.Store = (*DB)(nil)

// feedbackTime is the layout of feedback.recorded_at: UTC with a fixed
// number of digits, so that text order is time order and Since is a
// string comparison on both dialects.
const feedbackTime = "2006-01-02T15:04:05.000000000Z"

// feedbackColumns are the columns of a record, in Record's order.
const feedbackColumns = `recorded_at, tenant, session_id, task_id, node_id, step, tool, args_digest,
    model_output, outcome, message, code, code_name, category, recoverable, next_action, status,
    stalls, stalls_added, result, weight`

// feedbackRows is the most rows of one INSERT: 21 parameters each stays
// far below the parameter limits of SQLite (32766) and PostgreSQL (65535).
const feedbackRows = 200

// AddFeedback stores feedback records in one transaction: all or none.
//
// Text is stored as valid UTF-8 without NUL bytes (each bad byte becomes
// U+FFFD): PostgreSQL refuses both in text columns, and one bad message
// must neither cost the records stored with it nor read back differently
// on the two dialects. Times are stored in UTC to the nanosecond.
func (s *DB) AddFeedback(ctx context.Context, records []feedback.Record) error {
	if len(records) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: add feedback: %w", err)
	}
	defer tx.Rollback()
	for len(records) > 0 {
		chunk := records[:min(len(records), feedbackRows)]
		records = records[len(chunk):]
		var q strings.Builder
		q.WriteString("INSERT INTO feedback (" + feedbackColumns + ") VALUES ")
		args := make([]any, 0, len(chunk)*21)
		for i, r := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, r.Time.UTC().Format(feedbackTime), text(r.Tenant), text(r.Session),
				text(r.Task), text(r.Node), r.Step, text(r.Tool), text(r.ArgsDigest), text(r.Output),
				text(r.Outcome), text(r.Message), text(r.Code), text(r.Name), text(r.Category),
				r.Recoverable, text(r.Next), text(r.Status), r.Stalls, r.StallsAdded, text(r.Result), r.Weight)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(q.String()), args...); err != nil {
			return fmt.Errorf("sqlstore: add feedback: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: add feedback: %w", err)
	}
	return nil
}

// text makes s storable in a PostgreSQL text column.
func text(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Feedback returns the stored records f selects, oldest first, records of
// one time in the order they were added.
func (s *DB) Feedback(ctx context.Context, f feedback.Filter) ([]feedback.Record, error) {
	var (
		where []string
		args  []any
	)
	if f.Tenant != "" {
		where, args = append(where, "tenant = ?"), append(args, f.Tenant)
	}
	if f.Tool != "" {
		where, args = append(where, "tool = ?"), append(args, f.Tool)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "recorded_at >= ?"), append(args, f.Since.UTC().Format(feedbackTime))
	}
	q := "SELECT " + feedbackColumns + " FROM feedback"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY recorded_at, id"
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: feedback: %w", err)
	}
	defer rows.Close()
	var out []feedback.Record
	for rows.Next() {
		var (
			r  feedback.Record
			at string
		)
		if err := rows.Scan(&at, &r.Tenant, &r.Session, &r.Task, &r.Node, &r.Step, &r.Tool, &r.ArgsDigest,
			&r.Output, &r.Outcome, &r.Message, &r.Code, &r.Name, &r.Category, &r.Recoverable, &r.Next, &r.Status,
			&r.Stalls, &r.StallsAdded, &r.Result, &r.Weight); err != nil {
			return nil, fmt.Errorf("sqlstore: feedback: %w", err)
		}
		if r.Time, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("sqlstore: feedback: recorded_at %q: %w", at, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: feedback: %w", err)
	}
	return out, nil
}
