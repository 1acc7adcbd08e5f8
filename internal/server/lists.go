package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/store"
)

// ArgLine is one bound argument of a held write as the approval question
// shows it: the contract's label (else the parameter path) and the value,
// masked when the contract marks the parameter sensitive — as the approval
// builtin wrote them into the suspension (abi.NodeSuspend.Summary).
type ArgLine struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// ApprovalList is a page of the tenant's approvals, newest first; Next,
// when set, is the cursor of the next page (?after=).
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
	Next      string     `json:"next"`
}

// approvalStatuses maps the ?status= filter to the status an approval
// carries: the decisions as stored (CONFIRM, REJECT, CANCEL), their past
// tenses, PENDING and STALE.
var approvalStatuses = map[string]string{
	"PENDING": "PENDING", "STALE": "STALE",
	"CONFIRM": "CONFIRM", "REJECT": "REJECT", "CANCEL": "CANCEL",
	"CONFIRMED": "CONFIRM", "REJECTED": "REJECT", "CANCELLED": "CANCEL",
}

// pageQuery reads ?limit= and ?after= of a listing, refusing any other
// parameter than those and extra.
func pageQuery(r *http.Request, extra ...string) (limit int, after store.Cursor, err error) {
	q := r.URL.Query()
	for k := range q {
		if k != "limit" && k != "after" && !slices.Contains(extra, k) {
			return 0, after, fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	limit = defaultSessionPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSessionPage {
			return 0, after, fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("limit must be a whole number from 1 to %d", maxSessionPage))
		}
		limit = n
	}
	if v := q.Get("after"); v != "" {
		c, ok := parseCursor(v)
		if !ok {
			return 0, after, fail(http.StatusBadRequest, CodeInvalidRequest, "after is not a cursor this API gave")
		}
		after = c
	}
	return limit, after, nil
}

// listApprovals pages through the tenant's approvals, newest first, from
// the directory: those of the tenant's sessions, on any instance. The
// directory keeps approvals per session, so a page reads every session of
// the tenant.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, tenant string) error {
	limit, after, err := pageQuery(r, "status")
	if err != nil {
		return err
	}
	want := ""
	if v := r.URL.Query().Get("status"); v != "" {
		st, ok := approvalStatuses[v]
		if !ok {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "status must be PENDING, CONFIRMED, REJECTED, CANCELLED or STALE")
		}
		want = st
	}
	all, err := s.tenantApprovals(r.Context(), tenant)
	if err != nil {
		s.log.Error("approval listing failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	slices.SortFunc(all, func(a, b Approval) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(b.ID, a.ID))
	})
	out := ApprovalList{Approvals: []Approval{}}
	for _, a := range all {
		if want != "" && a.Status != want {
			continue
		}
		if after.ID != "" {
			c := cmp.Or(a.Created.Compare(after.Created), cmp.Compare(a.ID, after.ID))
			if c >= 0 {
				continue
			}
		}
		if len(out.Approvals) == limit {
			last := out.Approvals[len(out.Approvals)-1]
			out.Next = formatCursor(store.Cursor{Created: last.Created, ID: last.ID})
			break
		}
		out.Approvals = append(out.Approvals, a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// tenantApprovals reads every approval of the tenant's sessions.
func (s *Server) tenantApprovals(ctx context.Context, tenant string) ([]Approval, error) {
	var out []Approval
	var after store.Cursor
	for {
		page, err := s.dir.Sessions(ctx, tenant, after, maxSessionPage)
		if err != nil {
			return nil, err
		}
		for _, ss := range page {
			if ss.Tenant != tenant {
				continue
			}
			recs, err := s.dir.Approvals(ctx, ss.ID)
			if err != nil {
				return nil, err
			}
			for _, rec := range recs {
				if rec.Tenant != tenant {
					continue
				}
				var a Approval
				if err := json.Unmarshal(rec.Doc, &a); err != nil {
					return nil, fmt.Errorf("server: approval %s: %w", rec.ID, err)
				}
				a.Status = rec.Status
				if a.ArgsSummary == nil {
					a.ArgsSummary = []ArgLine{}
				}
				out = append(out, a)
			}
		}
		if len(page) < maxSessionPage {
			return out, nil
		}
		last := page[len(page)-1]
		after = store.Cursor{Created: last.Created, ID: last.ID}
	}
}

// Instance is one instance sharing the directory, as the admin API shows
// it: until when its lease runs, how many sessions it serves, and whether
// it is the instance answering.
type Instance struct {
	ID         string     `json:"id"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	Sessions   int        `json:"sessions"`
	Self       bool       `json:"self"`
	// Plugins are the plugin instances of the answering process against
	// its instance budget (the self entry only).
	Plugins *PluginInstances `json:"plugin_instances,omitempty"`
}

// PluginInstances are one process's plugin instances, across tenants and
// plugins, against its instance budget (host.InstanceUsage).
type PluginInstances struct {
	// Live instances (idle and busy), Idle those idle, Peak the most alive
	// at once; MemoryBytes the linear memory they hold.
	Live        int   `json:"live"`
	Idle        int   `json:"idle"`
	Peak        int   `json:"peak"`
	MemoryBytes int64 `json:"memory_bytes"`
	// MaxInstances and MaxBytes are the budget (0: no bound), IdleSeconds
	// the idle time after which a tenant's instance is closed (0: never).
	MaxInstances int     `json:"max_instances"`
	MaxBytes     int64   `json:"max_bytes"`
	IdleSeconds  float64 `json:"idle_seconds"`
	// Evictions, reclaims, budget waits and the waits that found no room.
	Evicted   uint64 `json:"evicted"`
	Reclaimed uint64 `json:"reclaimed"`
	Waits     uint64 `json:"budget_waits"`
	Refused   uint64 `json:"budget_refused"`
}

func pluginInstances(h *host.Host) *PluginInstances {
	if h == nil {
		return nil
	}
	u := h.InstanceUsage()
	return &PluginInstances{Live: u.Live, Idle: u.Idle, Peak: u.Peak, MemoryBytes: u.MemoryBytes,
		MaxInstances: u.MaxInstances, MaxBytes: u.MaxBytes, IdleSeconds: u.IdleTime.Seconds(),
		Evicted: u.Evictions, Reclaimed: u.Reclaimed, Waits: u.Waits, Refused: u.Refused}
}

// listInstances lists the instances: from Options.Instances when set (the
// leases of a durable directory), else this one alone with the sessions it
// holds open.
func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) error {
	for k := range r.URL.Query() {
		return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
	}
	var list []Instance
	if s.opt.Instances != nil {
		var err error
		if list, err = s.opt.Instances(r.Context()); err != nil {
			s.log.Error("instance listing failed", "err", err)
			return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
		}
	}
	self := slices.IndexFunc(list, func(in Instance) bool { return in.ID == s.opt.Instance })
	if self < 0 {
		s.mu.Lock()
		n := len(s.sessions)
		s.mu.Unlock()
		list = append(list, Instance{ID: s.opt.Instance, Sessions: n})
		self = len(list) - 1
		if u := s.leaseUntil.Load(); u != 0 {
			t := time.Unix(0, u).UTC()
			list[self].LeaseUntil = &t
		}
	}
	for i := range list {
		list[i].Self = i == self
	}
	list[self].Plugins = pluginInstances(s.opt.Host)
	slices.SortFunc(list, func(a, b Instance) int { return cmp.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"instances": list})
	return nil
}

// FeedbackSource reads stored feedback records (TOOL_USE_RELIABILITY §4):
// sqlstore.DB.
type FeedbackSource interface {
	Feedback(ctx context.Context, f feedback.Filter) ([]feedback.Record, error)
}

// feedbackTools summarises the tenant's feedback records per tool and per
// error category, as `warden report tools --json` does; ?tool= and
// ?since= (RFC 3339) narrow the records.
func (s *Server) feedbackTools(w http.ResponseWriter, r *http.Request, tenant string) error {
	if s.opt.Feedback == nil {
		return fail(http.StatusNotFound, CodeFeedbackOff, "no feedback store is configured")
	}
	q := r.URL.Query()
	for k := range q {
		if k != "tool" && k != "since" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	f := feedback.Filter{Tenant: tenant, Tool: q.Get("tool")}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "since must be an RFC 3339 time")
		}
		f.Since = t
	}
	recs, err := s.opt.Feedback.Feedback(r.Context(), f)
	if err != nil {
		s.log.Error("feedback read failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the feedback store failed")
	}
	writeJSON(w, http.StatusOK, feedback.Summarize(recs))
	return nil
}
