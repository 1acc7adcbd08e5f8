package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentwarden/warden/loop"
)

// MaxWait bounds ?wait=: how long a request may wait for its run.
const MaxWait = 5 * time.Minute

// waitFor is how long a request waits for the run it starts: forever (the
// run's own RunTimeout), or up to d, 0 meaning not at all.
type waitFor struct {
	d       time.Duration
	forever bool
}

// parseWait reads ?wait= (a Go duration from 0s to MaxWait); def is the
// endpoint's default.
func parseWait(r *http.Request, def waitFor) (waitFor, error) {
	v, ok := r.URL.Query()["wait"]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v[0])
	if len(v) != 1 || err != nil || d < 0 || d > MaxWait {
		return waitFor{}, fail(http.StatusBadRequest, CodeInvalidRequest, "wait must be one duration from 0s to 5m (such as 30s), not "+quoteQuery(v))
	}
	return waitFor{d: d}, nil
}

func quoteQuery(v []string) string {
	if len(v) != 1 {
		return "several values"
	}
	return `"` + v[0] + `"`
}

// runAnswer is what a run came to, as the request that waited for it
// answers: a result, or an error.
type runAnswer struct {
	res        RunResult
	err        error
	retryAfter time.Duration
}

// runSlot is the tenant's run slot a request took (limited); a run that
// outlives its request takes it over and gives it back when it ends.
type runSlot struct {
	release func()
	taken   bool
}

type runSlotKey struct{}

// launch runs run on the session in a goroutine of its own, which holds
// the session's run lock (the caller took it) and the tenant's run slot
// until the run ends, so that the run outlives its request: its client
// may go away, follow the session's events or poll the task. The request
// waits as wait says: a run that ends in time is answered as it ended
// (200 with the task, or the error); one still going when the wait ends
// is answered 202 with the task as it is now. Location names the task.
//
// run returns how the task exited; an *apiError it returns is the answer
// as it is (the run refused the answer before anything ran), any other
// error fails the task.
func (s *Server) launch(w http.ResponseWriter, r *http.Request, ss *session, t *Task, wait waitFor,
	run func(ctx context.Context) (loop.TaskExit, error)) error {
	from := ss.lastSeq()
	release := func() {}
	if slot, ok := r.Context().Value(runSlotKey{}).(*runSlot); ok && slot != nil {
		release, slot.taken = slot.release, true
	}
	ss.mu.Lock()
	ss.active, ss.ending, ss.freed = t, false, make(chan struct{})
	ss.mu.Unlock()
	// The 202 of a run nobody waits for shows the task before it ran.
	var early RunResult
	if !wait.forever && wait.d == 0 {
		early = s.runView(ss, t, from)
	}
	done := make(chan runAnswer, 1)
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		ctx, cancel := s.runContext(r)
		defer cancel()
		exit, err := run(ctx)
		ss.mu.Lock()
		ss.ending = true
		ss.mu.Unlock()
		var a runAnswer
		var ae *apiError
		if errors.As(err, &ae) {
			a = runAnswer{err: ae, retryAfter: ae.retryAfter}
			// A client that did not wait learns it only from here and
			// from the task, which stays as it was.
			s.log.WarnContext(ctx, "answer refused", "request_id", requestID(ctx), "session", ss.id, "task", t.ID, "code", ae.code, "message", ae.message)
		} else {
			a = s.settle(ss, t, from, exit, err, requestID(ctx))
		}
		// Whoever sees the task settled finds the session and the
		// tenant's run slot free.
		ss.mu.Lock()
		ss.active = nil
		release()
		ss.run.Unlock()
		close(ss.freed)
		ss.freed = nil
		ss.mu.Unlock()
		done <- a
	}()
	w.Header().Set("Location", "/v1/sessions/"+ss.id+"/tasks/"+t.ID)
	if !wait.forever && wait.d == 0 {
		writeJSON(w, http.StatusAccepted, early)
		return nil
	}
	var timeout <-chan time.Time
	if !wait.forever {
		tm := time.NewTimer(wait.d)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case a := <-done:
		if a.err != nil {
			setRetryAfter(w, a.retryAfter)
			return a.err
		}
		writeJSON(w, http.StatusOK, a.res)
	case <-timeout:
		writeJSON(w, http.StatusAccepted, s.runView(ss, t, from))
	case <-r.Context().Done():
		// The client went away; the run goes on.
	}
	return nil
}

// runView is the task as it is now, with the events its run added so far.
func (s *Server) runView(ss *session, t *Task, from int64) RunResult {
	evs, _ := ss.since(from)
	res := RunResult{Task: ss.view(t), Events: evs}
	if res.Events == nil {
		res.Events = []Event{}
	}
	return res
}

// Drain waits until the runs in flight have ended or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
