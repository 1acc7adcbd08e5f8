package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is a Directory in memory, for one process.
type Memory struct {
	mu        sync.Mutex
	sessions  map[string]Session
	tasks     map[string]map[string]Doc
	approvals map[string]Approval
	order     []string // approval ids in the order added
	events    map[string][]Doc
	leases    map[string]time.Time
	addrs     map[string]string
	// latest is each session's latest task (its id, seq and status),
	// kept by PutTask as the SQL store keeps it on the session's row.
	latest map[string]latestTask
	// plugins are the tenants' plugin versions in the order installed;
	// skills the tenants' skills by tenant and key (Registry).
	plugins []PluginRecord
	skills  map[string]map[string]SkillRecord
}

var (
	_ Directory = (*Memory)(nil)
	_ Registry  = (*Memory)(nil)
)

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{sessions: map[string]Session{}, tasks: map[string]map[string]Doc{}, approvals: map[string]Approval{},
		events: map[string][]Doc{}, leases: map[string]time.Time{}, addrs: map[string]string{}, latest: map[string]latestTask{}}
}

func clone(d Doc) Doc { d.Doc = slices.Clone(d.Doc); return d }

func checkDoc(what string, doc json.RawMessage) error {
	if !json.Valid(doc) {
		return fmt.Errorf("store: %s: document is not JSON: %w", what, ErrInvalid)
	}
	return nil
}

func (m *Memory) CreateSession(_ context.Context, s Session) error {
	if s.ID == "" || s.Tenant == "" || s.Owner == "" {
		return fmt.Errorf("store: create session: id, tenant and owner are required: %w", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.ID]; ok {
		return fmt.Errorf("store: session %s: %w", s.ID, ErrExists)
	}
	s.Created = s.Created.UTC().Truncate(time.Millisecond)
	m.sessions[s.ID] = s
	return nil
}

func (m *Memory) LookupSession(_ context.Context, id string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return Session{}, fmt.Errorf("store: session %s: %w", id, ErrNotFound)
	}
	return s, nil
}

func (m *Memory) Sessions(_ context.Context, tenant string, after Cursor, limit int) ([]Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Session{}
	for _, s := range m.sessions {
		if s.Tenant == tenant && (after.ID == "" || before(s, after)) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return before(out[j], Cursor{out[i].Created, out[i].ID}) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// before reports whether s lists after the cursor: it is older, or as old
// with a smaller id.
func before(s Session, c Cursor) bool {
	return s.Created.Before(c.Created) || (s.Created.Equal(c.Created) && s.ID < c.ID)
}

func (m *Memory) Claim(_ context.Context, id, owner string, now time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return "", fmt.Errorf("store: session %s: %w", id, ErrNotFound)
	}
	prev := s.Owner
	if prev != owner && m.leases[prev].After(now) {
		return prev, fmt.Errorf("store: session %s: owner %s: %w", id, prev, ErrOwned)
	}
	s.Owner = owner
	m.sessions[id] = s
	return prev, nil
}

func (m *Memory) PutTask(_ context.Context, session string, t Doc) error {
	if t.ID == "" {
		return fmt.Errorf("store: put task: id is required: %w", ErrInvalid)
	}
	if err := checkDoc("task "+t.ID, t.Doc); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[session]; !ok {
		return fmt.Errorf("store: session %s: %w", session, ErrNotFound)
	}
	if m.tasks[session] == nil {
		m.tasks[session] = map[string]Doc{}
	}
	m.tasks[session][t.ID] = clone(t)
	if l, ok := m.latest[session]; !ok || t.Seq >= l.seq {
		var doc struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(t.Doc, &doc)
		m.latest[session] = latestTask{id: t.ID, seq: t.Seq, status: doc.Status}
	}
	return nil
}

func (m *Memory) Tasks(_ context.Context, session string) ([]Doc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Doc{}
	for _, t := range m.tasks[session] {
		out = append(out, clone(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func (m *Memory) AddApproval(_ context.Context, a Approval) error {
	if a.ID == "" || a.Tenant == "" || a.Session == "" || a.Status == "" {
		return fmt.Errorf("store: add approval: id, tenant, session and status are required: %w", ErrInvalid)
	}
	if err := checkDoc("approval "+a.ID, a.Doc); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.approvals[a.ID]; ok {
		return fmt.Errorf("store: approval %s: %w", a.ID, ErrExists)
	}
	a.Doc = slices.Clone(a.Doc)
	m.approvals[a.ID] = a
	m.order = append(m.order, a.ID)
	return nil
}

func (m *Memory) Approval(_ context.Context, id string) (Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return Approval{}, fmt.Errorf("store: approval %s: %w", id, ErrNotFound)
	}
	a.Doc = slices.Clone(a.Doc)
	return a, nil
}

func (m *Memory) Approvals(_ context.Context, session string) ([]Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Approval{}
	for _, id := range m.order {
		if a := m.approvals[id]; a.Session == session {
			a.Doc = slices.Clone(a.Doc)
			out = append(out, a)
		}
	}
	return out, nil
}

func (m *Memory) MoveApproval(_ context.Context, id, from, to string, doc json.RawMessage) (bool, error) {
	if err := checkDoc("approval "+id, doc); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return false, fmt.Errorf("store: approval %s: %w", id, ErrNotFound)
	}
	if a.Status != from {
		return false, nil
	}
	a.Status, a.Doc = to, slices.Clone(doc)
	m.approvals[id] = a
	return true, nil
}

func (m *Memory) AppendEvent(_ context.Context, session string, e Doc) error {
	if err := checkDoc(fmt.Sprintf("event %d", e.Seq), e.Doc); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[session]; !ok {
		return fmt.Errorf("store: session %s: %w", session, ErrNotFound)
	}
	evs := m.events[session]
	if i, found := slices.BinarySearchFunc(evs, e.Seq, func(d Doc, seq int64) int { return cmpInt(d.Seq, seq) }); found {
		return fmt.Errorf("store: session %s: event %d: %w", session, e.Seq, ErrExists)
	} else {
		m.events[session] = slices.Insert(evs, i, clone(e))
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *Memory) Events(_ context.Context, session string, after int64) ([]Doc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Doc{}
	for _, e := range m.events[session] {
		if e.Seq > after {
			out = append(out, clone(e))
		}
	}
	return out, nil
}

func (m *Memory) Heartbeat(_ context.Context, instance string, until time.Time) error {
	if instance == "" {
		return fmt.Errorf("store: heartbeat: instance is required: %w", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leases[instance] = until
	return nil
}

func (m *Memory) Release(_ context.Context, instance string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The instance stays known, with no lease (as sqlstore keeps its row).
	if _, ok := m.leases[instance]; ok {
		m.leases[instance] = time.Time{}
	}
	return nil
}

func (m *Memory) ReleaseOthers(_ context.Context, instance string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.leases {
		if id != instance {
			m.leases[id] = time.Time{}
		}
	}
	return nil
}

func (m *Memory) Advertise(_ context.Context, instance, addr string) error {
	if instance == "" || addr == "" {
		return fmt.Errorf("store: advertise: instance and address are required: %w", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addrs[instance] = addr
	return nil
}

func (m *Memory) LookupInstance(_ context.Context, instance string) (Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, leased := m.leases[instance]
	addr, advertised := m.addrs[instance]
	if !leased && !advertised {
		return Instance{}, fmt.Errorf("store: instance %s: %w", instance, ErrNotFound)
	}
	return Instance{ID: instance, LeaseUntil: until, Addr: addr}, nil
}
