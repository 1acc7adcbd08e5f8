package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// complete brings a task shown waiting or running in line with where its
// nodes stopped it, when the process died before the task was saved. A
// task whose nodes have all ended gets the end they came to: it would
// otherwise wait for an approval already used, or for a resume with
// nothing left to run, and keep every new message out; an approval still
// PENDING for it is made STALE, since nothing waits for it. A task shown
// running whose node waits for the user is shown waiting, with a PENDING
// approval when it waits for one: the question is asked, not left to a
// resume. A task shown waiting is left to reconcile.
func (s *Server) complete(ctx context.Context, ss *session, t *Task) (bool, error) {
	exit, stopped, err := ss.runner.StoppedTask(t.ID)
	if errors.Is(err, loop.ErrUnknownTask) {
		// Interrupted before its graph was saved: resume it.
		return false, nil
	}
	if err != nil || !stopped {
		return false, err
	}
	ss.mu.Lock()
	was := t.Status
	ss.mu.Unlock()
	if exit.Status == state.Suspended {
		if was != state.Running {
			return false, nil
		}
		return true, s.showWaiting(ctx, ss, t, exit)
	}
	approvals, err := s.dir.Approvals(ctx, ss.id)
	if err != nil {
		return false, fmt.Errorf("server: %w", err)
	}
	for _, a := range approvals {
		if a.Status != "PENDING" {
			continue
		}
		var view Approval
		if err := json.Unmarshal(a.Doc, &view); err != nil {
			return false, fmt.Errorf("server: approval %s: %w", a.ID, err)
		}
		if view.Task != t.ID {
			continue
		}
		if _, err := s.moveApproval(ctx, view, "STALE"); err != nil {
			return false, err
		}
	}
	ss.mu.Lock()
	t.Status, t.Node, t.Suspension, t.Approval = exit.Status, exit.Node, nil, ""
	t.Output, t.Reason, t.Reply = exit.Output, exit.Reason, exit.Reply
	ss.mu.Unlock()
	if err := ss.saveTask(ctx, t); err != nil {
		return false, err
	}
	s.log.Warn("task completed on recovery: its nodes had ended", "session", ss.id, "task", t.ID, "was", was, "status", exit.Status)
	return true, nil
}

// showWaiting shows a task as waiting at its suspended node, holding the
// approval it asks for unless one is PENDING already.
func (s *Server) showWaiting(ctx context.Context, ss *session, t *Task, exit loop.TaskExit) error {
	ss.mu.Lock()
	t.Status, t.Node, t.Suspension, t.Approval = state.Suspended, exit.Node, exit.Suspension, ""
	ss.mu.Unlock()
	if exit.Suspension.Kind == abi.SuspendApproval {
		approvals, err := s.dir.Approvals(ctx, ss.id)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		i := slices.IndexFunc(approvals, func(a store.Approval) bool { return a.Node == exit.Node && a.Status == "PENDING" })
		if i >= 0 {
			ss.mu.Lock()
			t.Approval = approvals[i].ID
			ss.mu.Unlock()
		} else if _, err := s.hold(ctx, ss, t, exit); err != nil {
			return err
		}
	}
	if err := ss.saveTask(ctx, t); err != nil {
		return err
	}
	s.log.Warn("task shown waiting on recovery: its node waits for the user", "session", ss.id, "task", t.ID, "node", exit.Node, "kind", exit.Suspension.Kind)
	return nil
}

// RunResult is what a message or an answer came to: the task after the
// run, the events the run added, and the approval it now waits for.
type RunResult struct {
	Task     Task      `json:"task"`
	Approval *Approval `json:"approval,omitempty"`
	Events   []Event   `json:"events"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, tenant string) error {
	ss, err := s.lookup(r.Context(), tenant, r.PathValue("session"))
	if err != nil {
		return err
	}
	var req struct {
		Text string `json:"text"`
	}
	if err := decode(w, r, maxBody, &req); err != nil {
		return err
	}
	if err := checkText("text", req.Text); err != nil {
		return err
	}
	platform, err := s.platformOf(r)
	if err != nil {
		return err
	}
	wait, err := parseWait(r, waitFor{})
	if err != nil {
		return err
	}
	if !ss.takeRun(r.Context()) {
		return errSessionBusy
	}
	locked := true
	defer func() {
		if locked {
			ss.run.Unlock()
		}
	}()
	ss.mu.Lock()
	for _, t := range ss.tasks {
		if t.Status == state.Suspended {
			ss.mu.Unlock()
			return fail(http.StatusConflict, CodeTaskPending, fmt.Sprintf("task %s waits for the user's answer", t.ID))
		}
	}
	id := "t" + strconv.Itoa(ss.next+1)
	ss.mu.Unlock()
	// The task runs with the agent's skills as they are now.
	if err := s.refresh(r.Context(), ss, id); err != nil {
		s.log.Error("skills not loaded", "session", ss.id, "task", id, "err", err)
		return fail(http.StatusInternalServerError, CodeSetupFailed, "the agent's skills could not be loaded")
	}
	ss.mu.Lock()
	ss.next++
	t := &Task{ID: "t" + strconv.Itoa(ss.next), Objective: req.Text, Status: state.Running}
	ss.tasks = append(ss.tasks, t)
	ss.mu.Unlock()
	if err := ss.saveTask(r.Context(), t); err != nil {
		// Nothing ran: the task is forgotten as if never posted.
		ss.mu.Lock()
		ss.tasks = ss.tasks[:len(ss.tasks)-1]
		ss.next--
		ss.mu.Unlock()
		s.log.Error("task not stored", "session", ss.id, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}

	locked = false
	return s.launch(w, r, ss, t, wait, func(ctx context.Context) (loop.TaskExit, error) {
		return ss.runner.RunTask(ctx, loop.TaskInput{ID: t.ID, Objective: req.Text, Platform: platform})
	})
}

func checkText(field, v string) error {
	switch {
	case v == "":
		return fail(http.StatusBadRequest, CodeInvalidRequest, field+" is required")
	case len(v) > maxText:
		return fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("%s exceeds %d bytes", field, maxText))
	case !utf8.ValidString(v):
		return fail(http.StatusBadRequest, CodeInvalidRequest, field+" is not valid UTF-8")
	}
	return nil
}

// runContext detaches a run from its client: a run cut halfway would
// leave a node between a call and its record. Only RunTimeout ends it.
func (s *Server) runContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.opt.RunTimeout)
}

// settle records how a run left the task, holds a new approval if it asks
// for one, and returns the answer: the run's events, or the error.
//
// A run that failed on something other than the provider answers 500
// run_failed saying what failed (runFailure: never the error's own text,
// which may hold data) and the request id; the server log has the cause
// under the same request_id.
func (s *Server) settle(ss *session, t *Task, from int64, exit loop.TaskExit, runErr error, rid string) runAnswer {
	var ap *Approval
	ss.mu.Lock()
	modelErr, retryAfter := modelFailure(runErr)
	where := " (the server log has the cause)"
	if rid != "" {
		where = " (request " + rid + "; the server log has the cause)"
	}
	failed := fail(http.StatusInternalServerError, CodeRunFailed, "the runtime failed while running the task: "+runFailure(runErr)+where)
	if runErr != nil {
		t.Status, t.Reason = state.Failed, failed.message
		if modelErr != nil {
			t.Reason = modelErr.message
		}
	} else {
		t.Status, t.Node, t.Suspension = exit.Status, exit.Node, exit.Suspension
		t.Output, t.Reason, t.Reply, t.Approval = exit.Output, exit.Reason, exit.Reply, ""
	}
	ss.mu.Unlock()
	ctx := context.Background()
	if runErr != nil {
		s.log.Error("run failed", "request_id", rid, "tenant", ss.tenant, "session", ss.id, "task", t.ID, "err", runErr)
		// The trace ends as the task did: a final TASK event with the
		// code and the cause the API gives (never the error's own text).
		code := failed.code
		if modelErr != nil {
			code = modelErr.code
		}
		ss.sink.Emit(loop.Event{Kind: loop.KindTask, Task: t.ID, Status: string(state.Failed), Name: code,
			Message: t.Reason, Level: "WARN"})
		if err := ss.saveTask(ctx, t); err != nil {
			s.log.Error("task not stored", "session", ss.id, "task", t.ID, "err", err)
		}
		if modelErr != nil {
			return runAnswer{err: modelErr, retryAfter: retryAfter}
		}
		return runAnswer{err: failed}
	}
	if exit.Status == state.Suspended && exit.Suspension != nil && exit.Suspension.Kind == abi.SuspendApproval {
		var err error
		if ap, err = s.hold(ctx, ss, t, exit); err != nil {
			s.log.Error("approval not stored", "session", ss.id, "task", t.ID, "err", err)
			return runAnswer{err: fail(http.StatusInternalServerError, CodeInternal, "the session store failed")}
		}
	}
	if err := ss.saveTask(ctx, t); err != nil {
		s.log.Error("task not stored", "session", ss.id, "task", t.ID, "err", err)
		return runAnswer{err: fail(http.StatusInternalServerError, CodeInternal, "the session store failed")}
	}
	evs, _ := ss.since(from)
	res := RunResult{Events: evs, Approval: ap}
	if res.Events == nil {
		res.Events = []Event{}
	}
	ss.mu.Lock()
	res.Task = ss.maskedLocked(*t)
	ss.mu.Unlock()
	return runAnswer{res: res}
}

func (s *Server) taskOf(r *http.Request, tenant string) (*session, *Task, error) {
	ss, err := s.lookup(r.Context(), tenant, r.PathValue("session"))
	if err != nil {
		return nil, nil, err
	}
	t, ok := ss.task(r.PathValue("task"))
	if !ok {
		return nil, nil, errTaskNotFound
	}
	return ss, t, nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request, tenant string) error {
	ss, t, err := s.taskOf(r, tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ss.view(t))
	return nil
}

func (s *Server) getTrace(w http.ResponseWriter, r *http.Request, tenant string) error {
	ss, t, err := s.taskOf(r, tenant)
	if err != nil {
		return err
	}
	all, _ := ss.since(0)
	out := []Event{}
	for _, e := range all {
		if e.Task == t.ID {
			out = append(out, e)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": t.ID, "events": out})
	return nil
}

// resume answers a task's suspension of the given kind with answer, then
// runs the task on.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, tenant, kind string, answer func(ctx context.Context, ss *session, node string) error) error {
	wait, err := parseWait(r, waitFor{forever: true})
	if err != nil {
		return err
	}
	ss, t, err := s.taskOf(r, tenant)
	if err != nil {
		return err
	}
	if !ss.takeRun(r.Context()) {
		return errSessionBusy
	}
	ss.mu.Lock()
	waiting := t.Status == state.Suspended && t.Suspension != nil && t.Suspension.Kind == kind
	node := t.Node
	ss.mu.Unlock()
	if !waiting {
		ss.run.Unlock()
		return fail(http.StatusConflict, CodeNotSuspended, fmt.Sprintf("task %s does not wait for %s", t.ID, kind))
	}
	return s.launch(w, r, ss, t, wait, func(ctx context.Context) (loop.TaskExit, error) {
		return s.answerRun(ctx, ss, t, kind, node, answer)
	})
}

// answerRun answers a suspension and runs the task on: an answer the
// runtime refuses is the request's error, and leaves the task waiting.
func (s *Server) answerRun(ctx context.Context, ss *session, t *Task, kind, node string,
	answer func(ctx context.Context, ss *session, node string) error) (loop.TaskExit, error) {
	if err := answer(ctx, ss, node); err != nil {
		if errors.Is(err, loop.ErrNotSuspended) || errors.Is(err, state.ErrNotSuspended) {
			return loop.TaskExit{}, fail(http.StatusConflict, CodeNotSuspended, fmt.Sprintf("task %s does not wait for %s", t.ID, kind))
		}
		if errors.Is(err, state.ErrDigestMismatch) || errors.Is(err, state.ErrNotGated) {
			return loop.TaskExit{}, fail(http.StatusConflict, CodeApprovalStale, "the held write is no longer the one to approve")
		}
		if errors.Is(err, loop.ErrNoVerifyTool) {
			return loop.TaskExit{}, fail(http.StatusConflict, CodeNoVerifyTool, "the write has no verify tool: answer whether it took effect with took true or false")
		}
		var early *loop.VerifyTooEarlyError
		if errors.As(err, &early) {
			ae := fail(http.StatusConflict, CodeVerifyTooEarly, early.Observation.Message())
			ae.retryAfter = early.RetryAfter
			return loop.TaskExit{}, ae
		}
		return loop.TaskExit{}, err
	}
	return ss.runner.ResumeTask(ctx, t.ID)
}

func (s *Server) answerFollowUp(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req struct {
		Answer string `json:"answer"`
	}
	if err := decode(w, r, maxBody, &req); err != nil {
		return err
	}
	if err := checkText("answer", req.Answer); err != nil {
		return err
	}
	return s.resume(w, r, tenant, abi.SuspendFollowUp, func(ctx context.Context, ss *session, node string) error {
		_, err := ss.runner.AnswerFollowUp(ctx, node, req.Answer)
		return err
	})
}

func (s *Server) answerVerify(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req struct {
		Took *bool `json:"took"`
	}
	if err := decode(w, r, maxBody, &req); err != nil {
		return err
	}
	return s.resume(w, r, tenant, abi.SuspendVerify, func(ctx context.Context, ss *session, node string) error {
		if req.Took == nil {
			// No answer: the skill's verify tool settles the write.
			_, err := ss.runner.VerifyNode(ctx, node)
			return err
		}
		_, err := ss.runner.AnswerVerify(ctx, node, *req.Took)
		return err
	})
}

// resumeTask runs on a task a dead process left RUNNING: the task was
// interrupted between two steps (a write in flight is not, it waits for
// VERIFY) and its node goes on from its stored conversation; a task
// interrupted before it was planned is planned now (loop.RestartTask).
func (s *Server) resumeTask(w http.ResponseWriter, r *http.Request, tenant string) error {
	if r.ContentLength != 0 {
		var req struct{}
		if err := decode(w, r, maxBody, &req); err != nil {
			return err
		}
	}
	ss, t, err := s.taskOf(r, tenant)
	if err != nil {
		return err
	}
	wait, err := parseWait(r, waitFor{forever: true})
	if err != nil {
		return err
	}
	// A task interrupted before it was planned has no identity yet: it
	// takes this round's (a planned one keeps its message's).
	platform, err := s.platformOf(r)
	if err != nil {
		return err
	}
	if !ss.takeRun(r.Context()) {
		return errSessionBusy
	}
	ss.mu.Lock()
	status := t.Status
	ss.mu.Unlock()
	if status != state.Running {
		ss.run.Unlock()
		return fail(http.StatusConflict, CodeNotInterrupted, fmt.Sprintf("task %s was not interrupted (%s)", t.ID, status))
	}
	return s.launch(w, r, ss, t, wait, func(ctx context.Context) (loop.TaskExit, error) {
		return ss.runner.RestartTask(ctx, loop.TaskInput{ID: t.ID, Objective: t.Objective, Platform: platform})
	})
}
