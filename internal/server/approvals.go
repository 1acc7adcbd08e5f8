package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// Approval is a write held for the user's decision.
type Approval struct {
	ID         string          `json:"id"`
	Session    string          `json:"session"`
	Task       string          `json:"task"`
	Node       string          `json:"node"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ArgsDigest string          `json:"argsDigest"`
	// ArgsSummary is the bound arguments as the question shows them, one
	// label and value each, sensitive values masked (CONTRACT_SPEC §14.1).
	ArgsSummary []ArgLine `json:"args_summary"`
	Question    string    `json:"question,omitempty"`
	// Status is PENDING until answered, then the decision (CONFIRM,
	// REJECT, CANCEL), or STALE when the held write changed under it.
	Status   string     `json:"status"`
	Created  time.Time  `json:"created"`
	Answered *time.Time `json:"answered,omitempty"`
	// Reason is why the user decided as they did, when they said.
	Reason string `json:"reason,omitempty"`
	// AnsweredBy is who answered, with Answered when.
	AnsweredBy *Answerer `json:"answered_by,omitempty"`
}

// Answerer is who answered an approval: the key's tenant, the key's
// fingerprint (never the key), and the login identity a trusted gateway
// passed with the answer.
type Answerer struct {
	Tenant   string                     `json:"tenant"`
	Key      string                     `json:"key"`
	Platform map[string]json.RawMessage `json:"platform,omitempty"`
}

// answerer is who sends r under tenant's key.
func (s *Server) answerer(r *http.Request, tenant string) (*Answerer, error) {
	key, _ := r.Context().Value(keyCtx{}).(string)
	sum := sha256.Sum256([]byte(key))
	p, err := s.platformOf(r)
	if err != nil {
		return nil, err
	}
	return &Answerer{Tenant: tenant, Key: "sha256:" + hex.EncodeToString(sum[:6]), Platform: p}, nil
}

// hold records the approval a suspended task asks for: the write the store
// holds (its bound arguments and their digest), under a fresh id. A
// pending approval of the same node is made STALE first: only the newest
// question can be answered.
func (s *Server) hold(ctx context.Context, ss *session, t *Task, exit loop.TaskExit) (*Approval, error) {
	sus := exit.Suspension
	a := &Approval{ID: newID("ap_"), Session: ss.id, Task: t.ID, Node: exit.Node,
		Tool: sus.Tool, Args: sus.Args, ArgsDigest: sus.ArgsDigest, Question: sus.Question, Status: "PENDING",
		Created: s.opt.Now().UTC().Truncate(time.Millisecond)}
	n, err := ss.store.Node(exit.Node)
	if err == nil && n.Gated != nil {
		a.Tool, a.Args, a.ArgsDigest = n.Gated.Tool, n.Gated.Args, n.Gated.ArgsDigest
	}
	// The summary is the approval builtin's: its lines of the question,
	// masked as that plugin decided (CONTRACT_SPEC §14.1).
	a.ArgsSummary = []ArgLine{}
	if sus != nil {
		for _, l := range sus.Summary {
			a.ArgsSummary = append(a.ArgsSummary, ArgLine(l))
		}
	}
	if a.ArgsDigest == "" && len(a.Args) > 0 {
		a.ArgsDigest = state.ArgsDigest(a.Args)
	}
	// The digest is the held write's; what the API shows of its
	// arguments has the sensitive values masked (CONTRACT_SPEC §5.2).
	ss.mu.Lock()
	a.Args, _ = ss.labels.maskArgs(a.Tool, a.Args)
	a.Question = maskText(a.Question, ss.secrets)
	ss.mu.Unlock()
	old, err := s.dir.Approvals(ctx, ss.id)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	for _, o := range old {
		if o.Node != a.Node || o.Status != "PENDING" {
			continue
		}
		var view Approval
		if err := json.Unmarshal(o.Doc, &view); err != nil {
			return nil, fmt.Errorf("server: approval %s: %w", o.ID, err)
		}
		if _, err := s.moveApproval(ctx, view, "STALE"); err != nil {
			return nil, err
		}
	}
	doc, err := abi.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("server: approval: %w", err)
	}
	if err := s.dir.AddApproval(ctx, store.Approval{ID: a.ID, Tenant: ss.tenant, Session: ss.id, Node: a.Node, Status: a.Status, Doc: doc}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	ss.mu.Lock()
	t.Approval = a.ID
	ss.mu.Unlock()
	return a, nil
}

// moveApproval moves a PENDING approval to its answer, once: false when it
// was no longer PENDING.
func (s *Server) moveApproval(ctx context.Context, a Approval, to string) (bool, error) {
	now := s.opt.Now().UTC().Truncate(time.Millisecond)
	a.Status, a.Answered = to, &now
	doc, err := abi.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("server: approval %s: %w", a.ID, err)
	}
	moved, err := s.dir.MoveApproval(context.WithoutCancel(ctx), a.ID, "PENDING", to, doc)
	if err != nil {
		return false, fmt.Errorf("server: %w", err)
	}
	return moved, nil
}

// approvalOf returns the tenant's approval; a foreign one is not found.
func (s *Server) approvalOf(ctx context.Context, tenant, id string) (Approval, error) {
	rec, err := s.dir.Approval(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Tenant != tenant) {
		return Approval{}, errApprovalNotFound
	}
	if err != nil {
		s.log.Error("approval lookup failed", "approval", id, "err", err)
		return Approval{}, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	var a Approval
	if err := json.Unmarshal(rec.Doc, &a); err != nil {
		s.log.Error("approval unreadable", "approval", id, "err", err)
		return Approval{}, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	a.Status = rec.Status
	if a.ArgsSummary == nil {
		a.ArgsSummary = []ArgLine{}
	}
	return a, nil
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request, tenant string) error {
	a, err := s.approvalOf(r.Context(), tenant, r.PathValue("approval"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request, tenant string) error {
	view, err := s.approvalOf(r.Context(), tenant, r.PathValue("approval"))
	if err != nil {
		return err
	}
	var req struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if err := decode(w, r, maxBody, &req); err != nil {
		return err
	}
	d := loop.Decision(req.Decision)
	if d != loop.Confirm && d != loop.Reject && d != loop.Cancel {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "decision must be CONFIRM, REJECT or CANCEL")
	}
	if req.Reason != "" {
		if err := checkText("reason", req.Reason); err != nil {
			return err
		}
	}
	wait, err := parseWait(r, waitFor{forever: true})
	if err != nil {
		return err
	}
	by, err := s.answerer(r, tenant)
	if err != nil {
		return err
	}
	ss, err := s.lookup(r.Context(), tenant, view.Session)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.code == CodeSessionNotFound {
			return errApprovalNotFound
		}
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
	// Under the session's run lock, on the instance that holds the
	// session, the approval's status cannot change except here: read it
	// again, check it, and use it up before anything runs.
	if view, err = s.approvalOf(r.Context(), tenant, view.ID); err != nil {
		return err
	}
	switch view.Status {
	case "PENDING":
	case "STALE":
		return fail(http.StatusConflict, CodeApprovalStale, "this approval was replaced; answer the task's current one")
	default:
		return fail(http.StatusConflict, CodeApprovalUsed, "this approval was already answered ("+view.Status+")")
	}
	t, ok := ss.task(view.Task)
	if !ok {
		return errApprovalNotFound
	}
	n, err := ss.store.Node(view.Node)
	if err != nil || n.Status != state.Suspended || n.Gated == nil || n.Gated.ArgsDigest != view.ArgsDigest {
		if _, err := s.moveApproval(r.Context(), view, "STALE"); err != nil {
			s.log.Error("approval not stored", "approval", view.ID, "err", err)
		}
		return fail(http.StatusConflict, CodeApprovalStale, "the held write is no longer the one this approval was asked for")
	}
	view.Reason, view.AnsweredBy = req.Reason, by
	moved, err := s.moveApproval(r.Context(), view, string(d))
	if err != nil {
		s.log.Error("approval not stored", "approval", view.ID, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	if !moved {
		return fail(http.StatusConflict, CodeApprovalUsed, "this approval was already answered")
	}
	locked = false
	return s.launch(w, r, ss, t, wait, func(ctx context.Context) (loop.TaskExit, error) {
		if _, err := ss.runner.Approve(ctx, view.Node, d); err != nil {
			if errors.Is(err, loop.ErrNotSuspended) || errors.Is(err, state.ErrNotSuspended) ||
				errors.Is(err, state.ErrDigestMismatch) || errors.Is(err, state.ErrNotGated) {
				return loop.TaskExit{}, fail(http.StatusConflict, CodeApprovalStale, "the held write is no longer the one this approval was asked for")
			}
			return loop.TaskExit{}, err
		}
		return ss.runner.ResumeTask(ctx, view.Task)
	})
}
