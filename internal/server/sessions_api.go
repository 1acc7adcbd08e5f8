package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Locale is the language of the agent's texts to the user and the
	// model (outcome messages, next steps, questions): the agent's
	// locale setting (serve's agents: locale), fixed at start.
	Locale string `json:"locale,omitempty"`
	Tasks  []Task `json:"tasks"`
}

func (ss *session) info() SessionInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	in := SessionInfo{ID: ss.id, Created: ss.created, Locale: string(ss.cfg.Locale), Tasks: []Task{}}
	for _, t := range ss.tasks {
		in.Tasks = append(in.Tasks, ss.viewLocked(t))
	}
	return in
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req struct{}
	if r.ContentLength != 0 {
		if err := decode(w, r, maxBody, &req); err != nil {
			return err
		}
	}
	done, err := s.startSession(w, tenant)
	if err != nil {
		return err
	}
	defer done()
	ss, err := s.assemble(r.Context(), tenant, newID("s_"), false)
	if err != nil {
		s.log.Error("session setup failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeSetupFailed, "the agent could not be assembled")
	}
	if err := s.dir.CreateSession(r.Context(), store.Session{ID: ss.id, Tenant: tenant, Created: ss.created, Owner: s.opt.Instance}); err != nil {
		s.log.Error("session not stored", "tenant", tenant, "session", ss.id, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	ss.used.Store(s.opt.Now().UnixNano())
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, ss.info())
	return nil
}

// SessionList is a page of the tenant's sessions, newest first; Next, when
// set, is the cursor of the next page (?after=).
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
	Next     string           `json:"next,omitempty"`
}

// SessionSummary is a session as a listing shows it: with its task
// count, its latest task and that task's status (absent without a task),
// and the time of its last trace event (absent without one).
type SessionSummary struct {
	ID string `json:"id"`
	// Tenant is the session's tenant, in the platform's listing only.
	Tenant  string     `json:"tenant,omitempty"`
	Created time.Time  `json:"created"`
	Tasks   int        `json:"tasks"`
	Latest  string     `json:"latest,omitempty"`
	Status  string     `json:"status,omitempty"`
	Last    *time.Time `json:"last,omitempty"`
}

// sessionStatuses are what ?status= filters by: a latest task's status,
// or NONE for a session without a task.
var sessionStatuses = []string{"RUNNING", "SUSPENDED", "DONE", "FAILED", "CANCELLED", store.NoTask}

// Listing bounds.
const (
	defaultSessionPage = 50
	maxSessionPage     = 200
)

// listSessions pages through the tenant's sessions, from the directory:
// on any instance, whoever owns them.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, tenant string) error {
	return s.sessionPage(w, r, tenant)
}

// listAllSessions is the platform's view: every tenant's sessions, each
// naming its tenant, filtered as a tenant's listing is.
func (s *Server) listAllSessions(w http.ResponseWriter, r *http.Request) error {
	return s.sessionPage(w, r, "")
}

// sessionPage answers a page of sessions, the tenant's or, with tenant
// "", every tenant's.
func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request, tenant string) error {
	q := r.URL.Query()
	for k := range q {
		if k != "limit" && k != "after" && k != "status" && k != "since" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	f := store.SessionFilter{Tenant: tenant}
	if v := q.Get("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(sessionStatuses, st) {
				return fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("status %q is not one of %s", st, strings.Join(sessionStatuses, ", ")))
			}
			f.Status = append(f.Status, st)
		}
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "since must be an RFC 3339 time, such as 2026-01-02T15:04:05Z")
		}
		f.Since = t
	}
	limit := defaultSessionPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSessionPage {
			return fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", maxSessionPage))
		}
		limit = n
	}
	var after store.Cursor
	if v := q.Get("after"); v != "" {
		c, ok := parseCursor(v)
		if !ok {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "after is not a cursor this API gave")
		}
		after = c
	}
	states, ok := s.dir.(store.SessionStates)
	if !ok {
		s.log.Error("session listing failed: the store does not list session states", "tenant", tenant)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store cannot list sessions")
	}
	list, err := states.SessionStates(r.Context(), f, after, limit)
	if err != nil {
		s.log.Error("session listing failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	out := SessionList{Sessions: []SessionSummary{}}
	for _, ss := range list {
		sum := SessionSummary{ID: ss.ID, Created: ss.Created, Tasks: ss.Tasks, Latest: ss.Latest, Status: ss.Status}
		if tenant == "" {
			sum.Tenant = ss.Tenant
		}
		if !ss.Last.IsZero() {
			last := ss.Last
			sum.Last = &last
		}
		out.Sessions = append(out.Sessions, sum)
	}
	if len(list) == limit {
		last := list[len(list)-1]
		out.Next = formatCursor(store.Cursor{Created: last.Created, ID: last.ID})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// A cursor is opaque to clients: base64url of "<unix ms>.<session id>".
func formatCursor(c store.Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Created.UnixMilli(), 10) + "." + c.ID))
}

func parseCursor(v string) (store.Cursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return store.Cursor{}, false
	}
	ms, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || id == "" {
		return store.Cursor{}, false
	}
	return store.Cursor{Created: time.UnixMilli(n).UTC(), ID: id}, true
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, tenant string) error {
	ss, err := s.lookup(r.Context(), tenant, r.PathValue("session"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ss.info())
	return nil
}
