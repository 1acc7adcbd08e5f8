package store

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"
)

// latestTask is a session's latest task as a listing shows it.
type latestTask struct {
	id     string
	seq    int64
	status string
}

// SessionStates lists the sessions that pass f, each with its latest
// task's status (kept by PutTask).
func (m *Memory) SessionStates(_ context.Context, f SessionFilter, after Cursor, limit int) ([]SessionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SessionState{}
	for _, s := range m.sessions {
		if (f.Tenant != "" && s.Tenant != f.Tenant) || (after.ID != "" && !before(s, after)) || s.Created.Before(f.Since) {
			continue
		}
		st := SessionState{Session: s, Tasks: len(m.tasks[s.ID])}
		if l, ok := m.latest[s.ID]; ok {
			st.Latest, st.Status = l.id, l.status
		}
		if evs := m.events[s.ID]; len(evs) > 0 {
			st.Last = eventTime(evs[len(evs)-1].Doc)
		}
		status := st.Status
		if status == "" {
			status = NoTask
		}
		if len(f.Status) > 0 && !slices.Contains(f.Status, status) {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return before(out[j].Session, Cursor{out[i].Created, out[i].ID}) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// eventTime reads a trace event document's "time" (zero when it has none).
func eventTime(doc json.RawMessage) time.Time {
	var e struct {
		Time time.Time `json:"time"`
	}
	_ = json.Unmarshal(doc, &e)
	return e.Time
}
