package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// SessionStates lists the sessions that pass f with their latest task's
// status, in one query over the sessions' rows, which keep the latest
// task's status and the last activity (migration 0010).
func (s *DB) SessionStates(ctx context.Context, f store.SessionFilter, after store.Cursor, limit int) ([]store.SessionState, error) {
	if limit <= 0 {
		limit = 1000
	}
	// The latest task's id and status and the last event's time are kept
	// on the session's row by PutTask and AppendEvent (migration 0010): a
	// status filter reads the index on (tenant, status, created_at, id).
	status := "s.status"
	q := `SELECT s.id, s.tenant, s.created_at, s.owner,
  (SELECT COUNT(*) FROM api_tasks c WHERE c.session_id = s.id),
  s.latest_task, s.status, s.last_at
FROM api_sessions s
WHERE 1 = 1`
	var args []any
	if f.Tenant != "" {
		q += ` AND s.tenant = ?`
		args = append(args, f.Tenant)
	}
	if after.ID != "" {
		at := after.Created.UTC().Format(generationTime)
		q += ` AND (s.created_at < ? OR (s.created_at = ? AND s.id < ?))`
		args = append(args, at, at, after.ID)
	}
	if !f.Since.IsZero() {
		q += ` AND s.created_at >= ?`
		args = append(args, f.Since.UTC().Format(generationTime))
	}
	if len(f.Status) > 0 {
		in := make([]string, len(f.Status))
		for i, st := range f.Status {
			in[i] = "?"
			if st == store.NoTask {
				st = ""
			}
			args = append(args, st)
		}
		q += ` AND ` + status + ` IN (` + strings.Join(in, ", ") + `)`
	}
	q += ` ORDER BY s.created_at DESC, s.id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: session states: %w", err)
	}
	defer rows.Close()
	out := []store.SessionState{}
	for rows.Next() {
		var st store.SessionState
		var created, last string
		if err := rows.Scan(&st.ID, &st.Tenant, &created, &st.Owner, &st.Tasks, &st.Latest, &st.Status, &last); err != nil {
			return nil, fmt.Errorf("sqlstore: session states: %w", err)
		}
		if st.Created, err = time.Parse(time.RFC3339Nano, created); err != nil {
			return nil, fmt.Errorf("sqlstore: session %s: created_at: %w", st.ID, err)
		}
		st.Created = st.Created.Truncate(time.Millisecond)
		if last != "" {
			if st.Last, err = time.Parse(time.RFC3339Nano, last); err != nil {
				return nil, fmt.Errorf("sqlstore: session %s: last event time: %w", st.ID, err)
			}
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: session states: %w", err)
	}
	return out, nil
}
