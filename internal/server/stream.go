package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentwarden/warden/abi"
)

// streamEvents sends the session's events as server-sent events, from
// Last-Event-ID (or ?after=) on, until the client goes away.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, tenant string) error {
	ss, err := s.lookup(r.Context(), tenant, r.PathValue("session"))
	if err != nil {
		return err
	}
	ss.streams.Add(1)
	defer ss.streams.Add(-1)
	if ss.closed.Load() {
		// Closed as idle just now: the client's retry opens it again.
		return errSessionBusy
	}
	after := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("after"); q != "" {
		after = q
	}
	var seq int64
	if after != "" {
		if seq, err = strconv.ParseInt(after, 10, 64); err != nil || seq < 0 {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "after must be a non-negative event sequence number")
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return fail(http.StatusInternalServerError, CodeInternal, "streaming is not supported")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": warden events\n\n")
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		evs, wake := ss.since(seq)
		for _, e := range evs {
			b, _ := abi.Marshal(e)
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b)
			seq = e.Seq
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return nil
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-wake:
		}
	}
}
