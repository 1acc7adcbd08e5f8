package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentwarden/warden/abi"
)

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
// "approval", data the Approval, id the Unix milliseconds of its change.
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
		if idle++; idle >= 15 {
			fmt.Fprint(w, ": keep-alive\n\n")
			idle = 0
		}
		fl.Flush()
	}
}
