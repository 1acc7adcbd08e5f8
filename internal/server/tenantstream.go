package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/store"
)

// FollowUp is a task that waits for the user's answer to its question, as
// the tenant's stream tells it: Status WAITING, then ANSWERED once the
// task no longer waits. The question itself is read from the task, where
// its sensitive values are masked.
type FollowUp struct {
	Session string `json:"session"`
	Task    string `json:"task"`
	Status  string `json:"status"`
}

// tenantFollowUps lists the tasks of the tenant waiting for a follow-up
// answer: the latest tasks of its SUSPENDED sessions (an indexed filter of
// the directory) whose suspension asks the user.
func (s *Server) tenantFollowUps(ctx context.Context, tenant string) ([]FollowUp, error) {
	ls, ok := s.dir.(store.SessionStates)
	if !ok {
		return nil, nil
	}
	var out []FollowUp
	var after store.Cursor
	for {
		page, err := ls.SessionStates(ctx, store.SessionFilter{Tenant: tenant, Status: []string{"SUSPENDED"}}, after, maxSessionPage)
		if err != nil {
			return nil, err
		}
		for _, st := range page {
			docs, err := s.dir.Tasks(ctx, st.ID)
			if err != nil {
				return nil, err
			}
			for _, d := range docs {
				if d.ID != st.Latest {
					continue
				}
				var t struct {
					Status     string `json:"status"`
					Suspension *struct {
						Kind string `json:"kind"`
					} `json:"suspension"`
				}
				if err := json.Unmarshal(d.Doc, &t); err != nil {
					return nil, fmt.Errorf("server: task %s: %w", d.ID, err)
				}
				if t.Status == "SUSPENDED" && t.Suspension != nil && t.Suspension.Kind == abi.SuspendFollowUp {
					out = append(out, FollowUp{Session: st.ID, Task: d.ID, Status: "WAITING"})
				}
			}
		}
		if len(page) < maxSessionPage {
			return out, nil
		}
		last := page[len(page)-1]
		after = store.Cursor{Created: last.Created, ID: last.ID}
	}
}

// tenantPoll is how often a tenant's event stream reads the directory
// again. The directory is shared by every instance, so an approval held
// or answered on another instance reaches the stream within this time.
const tenantPoll = time.Second

// approvalStamp is when an approval last changed, in Unix milliseconds:
// the id of its event on the tenant's stream.
func approvalStamp(a Approval) int64 {
	if a.Answered != nil {
		return a.Answered.UnixMilli()
	}
	return a.Created.UnixMilli()
}

// streamTenant sends the tenant's approvals as server-sent events as they
// are held and answered, on any instance sharing the directory: event
// "approval", data the Approval, id the Unix milliseconds of its change;
// and the tasks waiting for a follow-up answer: event "followup", data a
// FollowUp (WAITING, then ANSWERED), without an id (every one waiting is
// sent again when the stream opens).
// Without Last-Event-ID (or ?after=) the stream opens with every pending
// approval, then an event "synced"; with it, it resends every approval
// changed at or after that time (a client keeps the newest per id), then
// "synced". The directory is read again every second.
func (s *Server) streamTenant(w http.ResponseWriter, r *http.Request, tenant string) error {
	for k := range r.URL.Query() {
		if k != "after" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	after := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("after"); q != "" {
		after = q
	}
	resume := int64(-1)
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "after must be a non-negative event id")
		}
		resume = n
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return fail(http.StatusInternalServerError, CodeInternal, "streaming is not supported")
	}
	all, err := s.tenantApprovals(r.Context(), tenant)
	if err != nil {
		s.log.Error("approval stream failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": warden tenant events\n\n")
	seen := map[string]string{}
	send := func(list []Approval, first bool) {
		slices.SortStableFunc(list, func(a, b Approval) int {
			return int(min(max(approvalStamp(a)-approvalStamp(b), -1), 1))
		})
		for _, a := range list {
			if seen[a.ID] == a.Status {
				continue
			}
			seen[a.ID] = a.Status
			switch {
			case first && resume < 0 && a.Status != "PENDING":
				continue
			case first && resume >= 0 && approvalStamp(a) < resume:
				continue
			}
			b, _ := abi.Marshal(a)
			fmt.Fprintf(w, "id: %d\nevent: approval\ndata: %s\n\n", approvalStamp(a), b)
		}
	}
	send(all, true)
	waiting := map[string]FollowUp{}
	follow := func(list []FollowUp) {
		now := map[string]FollowUp{}
		for _, f := range list {
			k := f.Session + "/" + f.Task
			now[k] = f
			if _, ok := waiting[k]; !ok {
				b, _ := abi.Marshal(f)
				fmt.Fprintf(w, "event: followup\ndata: %s\n\n", b)
			}
		}
		for k, f := range waiting {
			if _, ok := now[k]; !ok {
				f.Status = "ANSWERED"
				b, _ := abi.Marshal(f)
				fmt.Fprintf(w, "event: followup\ndata: %s\n\n", b)
			}
		}
		waiting = now
	}
	fus, err := s.tenantFollowUps(r.Context(), tenant)
	if err != nil {
		s.log.Error("follow-up stream failed", "tenant", tenant, "err", err)
		return nil
	}
	follow(fus)
	fmt.Fprint(w, "event: synced\ndata: {}\n\n")
	fl.Flush()
	tick := time.NewTicker(tenantPoll)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-tick.C:
		}
		all, err := s.tenantApprovals(r.Context(), tenant)
		if err != nil {
			if r.Context().Err() != nil {
				return nil
			}
			// The client reconnects with its Last-Event-ID.
			s.log.Error("approval stream failed", "tenant", tenant, "err", err)
			return nil
		}
		send(all, false)
		fus, err := s.tenantFollowUps(r.Context(), tenant)
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Error("follow-up stream failed", "tenant", tenant, "err", err)
			}
			return nil
		}
		follow(fus)
		if idle++; idle >= 15 {
			fmt.Fprint(w, ": keep-alive\n\n")
			idle = 0
		}
		fl.Flush()
	}
}
