package sqlstore

import (
	"context"
	"fmt"

	"github.com/agentwarden/warden/abi"
)

// SessionsWithStartedWrites lists the sessions that hold a write still
// STARTED: the ones a process that died mid-write left behind. Which of them
// to recover is the caller's decision (RecoverWrites per session): on a
// database shared by several instances, only the dead instance's sessions.
func (s *DB) SessionsWithStartedWrites(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT DISTINCT session_id FROM ledger WHERE state = ? ORDER BY session_id`), string(abi.LedgerStarted))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: sessions with started writes: %w", err)
	}
	return ids, nil
}
