package feedback

import (
	"context"
	"time"
)

// Store keeps feedback records: sqlstore.DB on SQLite or PostgreSQL.
type Store interface {
	// AddFeedback stores records, all or none.
	AddFeedback(ctx context.Context, records []Record) error
	// Feedback returns the stored records f matches, oldest first; records
	// of one time come in the order they were added.
	Feedback(ctx context.Context, f Filter) ([]Record, error)
}

// Filter selects feedback records. The zero Filter selects all.
type Filter struct {
	// Tenant and Tool, when set, select the records of that tenant and of
	// that tool.
	Tenant string
	Tool   string
	// Since, when set, selects the records stamped at or after it.
	Since time.Time
}

// Match reports whether f selects r.
func (f Filter) Match(r Record) bool {
	return (f.Tenant == "" || r.Tenant == f.Tenant) &&
		(f.Tool == "" || r.Tool == f.Tool) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since))
}
