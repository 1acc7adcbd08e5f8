package store

import (
	"context"
	"time"
)

// SessionState is a session as a listing for an operator shows it: how
// many tasks it has, its latest task and that task's status, and when its
// last trace event was recorded.
type SessionState struct {
	Session
	Tasks  int
	Latest string
	// Status is the latest task's status; "" when the session has none.
	Status string
	// Last is the time of the session's last trace event (zero without
	// one).
	Last time.Time
}

// SessionFilter narrows a listing of session states.
type SessionFilter struct {
	// Tenant is the tenant whose sessions are listed; "" lists every
	// tenant's (the platform's view).
	Tenant string
	// Status keeps the sessions whose latest task has one of these
	// statuses; NoTask stands for a session without a task. Empty keeps
	// every session.
	Status []string
	// Since keeps the sessions created at or after it (zero: any).
	Since time.Time
}

// NoTask is the status filter of a session without a task.
const NoTask = "NONE"

// SessionStates lists sessions with their latest task's status, filtered
// in the store: newest first (by Created, then ID), after the cursor, up
// to limit.
type SessionStates interface {
	SessionStates(ctx context.Context, f SessionFilter, after Cursor, limit int) ([]SessionState, error)
}
