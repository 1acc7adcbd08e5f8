package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/tools"
)

// maxText bounds a user message or follow-up answer, in bytes.
const maxText = 32 << 10

// Event is one trace event as the API shows it: the loop's event plus the
// tool's label from the skill contract.
type Event struct {
	loop.Event
	Label string `json:"label,omitempty"`
}

// Task is one user turn of a session as the API shows it.
type Task struct {
	ID         string            `json:"id"`
	Objective  string            `json:"objective"`
	Status     state.Status      `json:"status"`
	Node       string            `json:"node,omitempty"`
	Suspension *state.Suspension `json:"suspension,omitempty"`
	// Approval is the id of the pending approval, when the task waits for
	// one.
	Approval string `json:"approval,omitempty"`
	Output   string `json:"output,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Reply    string `json:"reply,omitempty"`
}

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
}

// session is one tenant's conversation with its agent, as this instance
// holds it: its runner over the session's state store, and the API's view
// (tasks, events) mirrored in the directory.
type session struct {
	id, tenant string
	created    time.Time
	runner     *loop.Runner
	store      state.Store
	// model, sink and cfg make the runner again for each message
	// (refresh), over the same store.
	model  model.Model
	sink   loop.Sink
	cfg    loop.Config
	labels map[string]string
	dir    store.Directory
	log    *slog.Logger

	// run is held by the request that runs the session's loop.
	run sync.Mutex
	// used is when a request last took the session (unix nanoseconds);
	// streams counts the event streams open on it. Both keep it open.
	used    atomic.Int64
	streams atomic.Int32
	// closed is set, under run, when the session is closed as idle.
	closed atomic.Bool

	mu     sync.Mutex
	events []Event
	seq    int64         // the last event's number
	wake   chan struct{} // closed and replaced when events are added
	tasks  []*Task
	next   int
	// active is the task a run is on (launch): it shows RUNNING until the
	// run has settled it and freed the session.
	active *Task
}

// view is a task as the API shows it now.
func (ss *session) view(t *Task) Task {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.viewLocked(t)
}

func (ss *session) viewLocked(t *Task) Task {
	v := *t
	if ss.active == t {
		v.Status, v.Suspension, v.Approval = state.Running, nil, ""
	}
	return v
}

// emit numbers a trace event in the session's sequence (which outlives the
// runner that made it), keeps it and stores it. It returns the event as
// numbered, for the other sinks.
func (ss *session) emit(e loop.Event) loop.Event {
	ss.mu.Lock()
	ss.seq++
	e.Seq = ss.seq
	ev := Event{Event: e, Label: ss.labels[e.Tool]}
	ss.events = append(ss.events, ev)
	close(ss.wake)
	ss.wake = make(chan struct{})
	ss.mu.Unlock()
	b, err := abi.Marshal(ev)
	if err == nil {
		err = ss.dir.AppendEvent(context.Background(), ss.id, store.Doc{Seq: e.Seq, Doc: b})
	}
	if err != nil {
		ss.log.Error("trace event not stored", "session", ss.id, "task", e.Task, "node", e.Node, "seq", e.Seq, "err", err)
	}
	return e
}

// tryRun takes the session's run lock. A session closed as idle in the
// meantime counts as busy: the client's retry opens it again.
func (ss *session) tryRun() bool {
	if !ss.run.TryLock() {
		return false
	}
	if ss.closed.Load() {
		ss.run.Unlock()
		return false
	}
	return true
}

// saveTask stores the API's view of a task.
func (ss *session) saveTask(ctx context.Context, t *Task) error {
	ss.mu.Lock()
	doc := *t
	seq := int64(slices.Index(ss.tasks, t) + 1)
	ss.mu.Unlock()
	b, err := abi.Marshal(doc)
	if err != nil {
		return fmt.Errorf("server: task %s: %w", doc.ID, err)
	}
	if err := ss.dir.PutTask(context.WithoutCancel(ctx), ss.id, store.Doc{ID: doc.ID, Seq: seq, Doc: b}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// since returns the events after seq and a channel closed at the next one.
func (ss *session) since(seq int64) ([]Event, <-chan struct{}) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	// Events are in Seq order: find the first after seq.
	i := sort.Search(len(ss.events), func(i int) bool { return ss.events[i].Seq > seq })
	return slices.Clone(ss.events[i:]), ss.wake
}

func (ss *session) lastSeq() int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.events) == 0 {
		return 0
	}
	return ss.events[len(ss.events)-1].Seq
}

func (ss *session) task(id string) (*Task, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, t := range ss.tasks {
		if t.ID == id {
			return t, true
		}
	}
	return nil, false
}

func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Tasks   []Task    `json:"tasks"`
}

func (ss *session) info() SessionInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	in := SessionInfo{ID: ss.id, Created: ss.created, Tasks: []Task{}}
	for _, t := range ss.tasks {
		in.Tasks = append(in.Tasks, ss.viewLocked(t))
	}
	return in
}

// lookup returns the tenant's session, opened on this instance; a foreign
// one is not found.
func (s *Server) lookup(ctx context.Context, tenant, id string) (*session, error) {
	return s.acquire(ctx, tenant, id)
}

// acquire returns the session this instance holds, or claims it in the
// directory and opens it: a session whose owner is alive elsewhere is
// refused with CodeSessionElsewhere; one whose owner died (or released
// it) moves here, and opening it recovers what the dead process left.
//
// While leases are kept (after Start) the directory is asked on every
// request, even for a session held here: another instance may have taken
// it over while this one's lease had run out.
func (s *Server) acquire(ctx context.Context, tenant, id string) (*session, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss != nil && ss.tenant != tenant {
		return nil, errSessionNotFound
	}
	leased := s.leaseUntil.Load() != 0
	if ss != nil && !leased {
		ss.used.Store(s.opt.Now().UnixNano())
		return ss, nil
	}
	if leased && !s.holding() {
		// This instance's own lease ran out (the store was unreachable):
		// renew it before claiming anything.
		if err := s.beat(ctx); err != nil {
			s.log.Error("lease not renewed", "instance", s.opt.Instance, "err", err)
			return nil, fail(http.StatusServiceUnavailable, CodeInternal, "the instance lost its lease on the session store")
		}
		s.mu.Lock()
		ss = s.sessions[id]
		s.mu.Unlock()
	}
	if ss != nil {
		prev, err := s.dir.Claim(ctx, id, s.opt.Instance, s.opt.Now())
		switch {
		case err == nil && prev == s.opt.Instance:
			ss.used.Store(s.opt.Now().UnixNano())
			return ss, nil
		case errors.Is(err, store.ErrOwned):
			s.forget(ss)
			return nil, elsewhere(prev)
		case err != nil:
			s.log.Error("session claim failed", "session", id, "err", err)
			return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
		}
		// Another instance held the session since this one opened it: the
		// copy here is stale. It is opened again once nothing runs on it.
		if !ss.run.TryLock() {
			return nil, errSessionBusy
		}
		s.forget(ss)
		ss.run.Unlock()
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	opened := s.sessions[id]
	s.mu.Unlock()
	if opened != nil {
		// Opened by another request meanwhile.
		opened.used.Store(s.opt.Now().UnixNano())
		return opened, nil
	}
	rec, err := s.dir.LookupSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Tenant != tenant) {
		return nil, errSessionNotFound
	}
	if err != nil {
		s.log.Error("session lookup failed", "session", id, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	prev, err := s.dir.Claim(ctx, id, s.opt.Instance, s.opt.Now())
	if errors.Is(err, store.ErrOwned) {
		return nil, elsewhere(prev)
	}
	if err != nil {
		s.log.Error("session claim failed", "session", id, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	ss, err = s.open(ctx, rec)
	if err != nil {
		s.log.Error("session open failed", "session", id, "tenant", tenant, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeSetupFailed, "the session could not be opened")
	}
	if prev != s.opt.Instance {
		s.log.Info("session taken over", "session", id, "from", prev, "instance", s.opt.Instance)
	}
	ss.used.Store(s.opt.Now().UnixNano())
	s.mu.Lock()
	s.sessions[id] = ss
	s.mu.Unlock()
	return ss, nil
}

func elsewhere(owner string) error {
	return fail(http.StatusConflict, CodeSessionElsewhere, fmt.Sprintf("the session is served by instance %s; send its requests there", owner))
}

// forget drops a session from this instance: no new run starts on it.
func (s *Server) forget(ss *session) {
	ss.closed.Store(true)
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
}

// forgetIdle drops every session held here that runs nothing, after this
// instance's lease ran out: another instance may own them now, and the
// next request opens them again only once the directory says so.
func (s *Server) forgetIdle() {
	s.mu.Lock()
	var all []*session
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		if ss.run.TryLock() {
			s.forget(ss)
			ss.run.Unlock()
		}
	}
}

// closeIdle closes the sessions no request used for IdleTimeout, that run
// nothing and stream to nobody: their state is in the directory, and their
// next request opens them again. It returns how many it closed.
func (s *Server) closeIdle() int {
	if s.opt.IdleTimeout <= 0 {
		return 0
	}
	cutoff := s.opt.Now().Add(-s.opt.IdleTimeout).UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, ss := range s.sessions {
		if ss.used.Load() > cutoff || ss.streams.Load() > 0 || !ss.run.TryLock() {
			continue
		}
		delete(s.sessions, id)
		ss.closed.Store(true)
		ss.run.Unlock()
		n++
	}
	return n
}

// open builds a session this process did not create, or no longer holds,
// from the directory: its agent as configured now, its tasks and events,
// then recovers its state store: a write left in flight is marked
// uncertain and its node waits for VERIFY (loop.Runner.Recover), never
// issued again.
func (s *Server) open(ctx context.Context, rec store.Session) (*session, error) {
	ss, err := s.assemble(ctx, rec.Tenant, rec.ID, false)
	if err != nil {
		return nil, err
	}
	ss.created = rec.Created
	docs, err := s.dir.Tasks(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, d := range docs {
		var t Task
		if err := json.Unmarshal(d.Doc, &t); err != nil {
			return nil, fmt.Errorf("server: open %s: task %s: %w", rec.ID, d.ID, err)
		}
		ss.tasks = append(ss.tasks, &t)
	}
	ss.next = len(ss.tasks)
	evs, err := s.dir.Events(ctx, rec.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, d := range evs {
		var e Event
		if err := json.Unmarshal(d.Doc, &e); err != nil {
			return nil, fmt.Errorf("server: open %s: event %d: %w", rec.ID, d.Seq, err)
		}
		ss.events = append(ss.events, e)
		ss.seq = d.Seq
	}
	marked, err := ss.runner.Recover()
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	for _, e := range marked {
		s.log.Warn("write left in flight marked UNKNOWN_PRE_CALL", "session", rec.ID, "node", e.NodeID, "tool", e.Tool)
		n, err := ss.store.Node(e.NodeID)
		if err != nil {
			continue
		}
		t, ok := ss.task(n.TaskID)
		if !ok || n.Status != state.Suspended {
			continue
		}
		ss.mu.Lock()
		t.Status, t.Node, t.Suspension, t.Approval = state.Suspended, n.ID, n.Suspension, ""
		ss.mu.Unlock()
		if err := ss.saveTask(ctx, t); err != nil {
			return nil, err
		}
	}
	if err := s.reconcile(ctx, ss); err != nil {
		return nil, fmt.Errorf("server: open %s: %w", rec.ID, err)
	}
	return ss, nil
}

// reconcile brings the API's view of a reopened session's waiting tasks in
// line with their nodes, for a process that died between the two: a task
// shown waiting for an approval whose node no longer waits runs on (resume
// it); a node that waits for an approval nobody can answer any more (the
// process died after the answer was taken, before the write was gated
// through) gets a new PENDING approval; a task shown waiting or running
// whose nodes have all ended is completed (complete).
func (s *Server) reconcile(ctx context.Context, ss *session) error {
	ss.mu.Lock()
	tasks := slices.Clone(ss.tasks)
	ss.mu.Unlock()
	var approvals []store.Approval
	for _, t := range tasks {
		ss.mu.Lock()
		status, node, sus := t.Status, t.Node, t.Suspension
		ss.mu.Unlock()
		if status != state.Suspended && status != state.Running {
			continue
		}
		if ended, err := s.complete(ctx, ss, t); err != nil || ended {
			if err != nil {
				return err
			}
			continue
		}
		if status != state.Suspended || node == "" {
			continue
		}
		n, err := ss.store.Node(node)
		if err != nil {
			return err
		}
		switch {
		case n.Status == state.Running:
			ss.mu.Lock()
			t.Status, t.Suspension, t.Approval = state.Running, nil, ""
			ss.mu.Unlock()
			if err := ss.saveTask(ctx, t); err != nil {
				return err
			}
		case n.Status == state.Suspended && n.Suspension != nil && n.Suspension.Kind == abi.SuspendApproval &&
			sus != nil && sus.Kind == abi.SuspendApproval:
			if approvals == nil {
				if approvals, err = s.dir.Approvals(ctx, ss.id); err != nil {
					return err
				}
			}
			if slices.ContainsFunc(approvals, func(a store.Approval) bool { return a.Node == n.ID && a.Status == "PENDING" }) {
				continue
			}
			a, err := s.hold(ctx, ss, t, loop.TaskExit{Status: state.Suspended, Node: n.ID, Suspension: n.Suspension})
			if err != nil {
				return err
			}
			s.log.Warn("approval asked again: the last one was answered but its write never ran", "session", ss.id, "task", t.ID, "approval", a.ID)
			if err := ss.saveTask(ctx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

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

// assemble builds a session: its store, its skills with their chains, its
// model and its runner. Nothing is registered until it all succeeded.
//
// A probe (Check) keeps its state in memory: it leaves nothing in the store.
func (s *Server) assemble(ctx context.Context, tenant, id string, probe bool) (*session, error) {
	drop := func(key string, problems []string) {
		s.log.Error("skill dropped", "tenant", tenant, "session", id, "skill", key, "problems", problems)
	}
	agent, skills, builtins, labels, err := s.skills(ctx, tenant, probe, drop)
	if err != nil {
		return nil, err
	}
	cfg, so := s.settings(agent.Profile.AgentCode, id)
	var st state.Store
	if s.opt.NewStore != nil && !probe {
		st, err = s.opt.NewStore(id, so)
	} else {
		st, err = state.NewMemory(so)
	}
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	m, err := s.opt.NewModel(tenant, id)
	if err != nil {
		return nil, fmt.Errorf("server: model: %w", err)
	}
	ss := &session{id: id, tenant: tenant, created: s.opt.Now().UTC().Truncate(time.Millisecond), store: st, labels: labels,
		dir: s.dir, log: s.log, wake: make(chan struct{}), model: m}
	if o, ok := m.(observable); ok {
		o.SetObserver(ss.observer())
	}
	cfg.Tenant = tenant
	if cfg.Now == nil {
		cfg.Now = s.opt.Now
	}
	ss.cfg = cfg
	ss.sink = loop.SinkFunc(func(e loop.Event) { ss.emit(e) })
	if s.opt.Observe != nil {
		if more := s.opt.Observe(tenant, id); more != nil {
			ss.sink = loop.SinkFunc(func(e loop.Event) { more.Emit(ss.emit(e)) })
		}
	}
	ss.runner, err = loop.New(loop.Options{Model: m, Store: st, Agent: agent.Profile, Skills: skills,
		Builtins: builtins, Sink: ss.sink, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("server: runner: %w", err)
	}
	return ss, nil
}

// skills loads the tenant's skills as they are now (loadSkills) and
// builds each one's chain: the first-party guards with its tenant guards
// placed among them. A skill that does not load is dropped through drop;
// strict makes a file skill's failure an error (the start's Check).
func (s *Server) skills(ctx context.Context, tenant string, strict bool, drop func(key string, problems []string)) (Agent, []loop.Skill, []loop.Builtin, map[string]string, error) {
	listed, err := s.opt.Tools.ListTools(ctx)
	if err != nil {
		return Agent{}, nil, nil, nil, fmt.Errorf("server: list tools: %w", err)
	}
	agent, err := s.loadSkills(ctx, tenant, listed, strict, drop)
	if err != nil {
		return Agent{}, nil, nil, nil, err
	}
	defs := map[string]catalog.BusinessTool{}
	for _, t := range listed {
		defs[t.Name] = catalog.BusinessTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
	}
	var recs []store.PluginRecord
	if reg := s.registry(); reg != nil {
		if recs, err = reg.Plugins(ctx, tenant); err != nil {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: plugins of %s: %w", tenant, err)
		}
	}
	inv := &chain.Invoker{Caller: s.caller(tenant), DefaultTimeout: s.opt.ToolTimeout}
	guards := s.guards()
	labels := map[string]string{}
	live, isLive := s.opt.Tools.(tools.Live)
	var skills []loop.Skill
	for _, sk := range agent.Skills {
		// A tool the contract is silent about is a write when its server's
		// annotations say so (RATIONALE: annotations as a fallback contract).
		hinted, _, err := tools.ApplyHints(sk, listed)
		if err != nil {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: skill %s: %w", sk.Profile.SkillKey, err)
		}
		sk = hinted
		// The skill's tenant guards, from the tenant's registry: a ref
		// that does not load drops the skill, never the guard alone.
		placed, err := s.placements(ctx, tenant, sk.Contract, recs)
		if err == nil {
			var ch *chain.Chain
			if ch, err = chain.New(guards, placed, inv); err == nil {
				var bts []catalog.BusinessTool
				for _, n := range sk.ToolNames {
					d, ok := defs[n]
					switch {
					case !ok && (!isLive || strict):
						// At start (strict) a tool no server lists is a
						// mistake in the skills, said loudly.
						err = fmt.Errorf("tool %s is not served", n)
					case !ok:
						// Since start its server dropped it, or the skills
						// named it since: the node's catalog offers it once
						// a server lists it again (tools/list_changed).
						s.log.Info("tool not served now", "skill", sk.Profile.SkillKey, "tool", n)
					default:
						bts = append(bts, d)
					}
					if err != nil {
						break
					}
				}
				if err == nil {
					for _, n := range sk.ToolNames {
						if t := toolOf(sk.Contract, n); t != nil && t.Label != "" && labels[n] == "" {
							labels[n] = t.Label
						}
					}
					lsk := loop.Skill{Skill: sk, Chain: ch, Tools: bts}
					if isLive {
						lsk.Live = tools.LiveDefinitions(live, sk, listed)
					}
					skills = append(skills, lsk)
					continue
				}
			}
		}
		if strict {
			return Agent{}, nil, nil, nil, fmt.Errorf("server: skill %s: %w", sk.Profile.SkillKey, err)
		}
		drop(sk.Profile.SkillKey, []string{err.Error()})
	}
	agent.Skills = nil
	for _, k := range skills {
		agent.Skills = append(agent.Skills, k.Skill)
	}
	// The first-party builtins, then the tenant's own.
	builtins := append(s.builtins(), s.tenantBuiltins(ctx, tenant, recs, func(ref, reason string) {
		drop("builtin:"+ref, []string{reason})
	})...)
	return agent, skills, builtins, labels, nil
}

// refresh loads the session's skills as they are now, for the task about
// to run (CONTRACT_SPEC §1.1: skills load each round), so an uploaded,
// changed or deleted skill or plugin takes effect with the next message
// on every instance. A skill that does not load is dropped with an ERROR
// event of kind SKILL on the task (a tenant builtin that does not load is
// left out the same way, naming it). Call it holding the session's run
// lock, with no task waiting.
func (s *Server) refresh(ctx context.Context, ss *session, task string) error {
	drop := func(key string, problems []string) {
		s.log.Error("skill dropped", "tenant", ss.tenant, "session", ss.id, "task", task, "skill", key, "problems", problems)
		msg := fmt.Sprintf("skill %s dropped: %s", key, strings.Join(problems, "; "))
		if ref, ok := strings.CutPrefix(key, "builtin:"); ok {
			msg = fmt.Sprintf("builtin %s not offered: %s", ref, strings.Join(problems, "; "))
		}
		ss.sink.Emit(loop.Event{Kind: KindSkill, Task: task, Level: "ERROR", Status: "dropped", Message: msg})
	}
	agent, skills, builtins, labels, err := s.skills(ctx, ss.tenant, false, drop)
	if err != nil {
		return err
	}
	r, err := loop.New(loop.Options{Model: ss.model, Store: ss.store, Agent: agent.Profile, Skills: skills,
		Builtins: builtins, Sink: ss.sink, Config: ss.cfg})
	if err != nil {
		return fmt.Errorf("server: runner: %w", err)
	}
	ss.mu.Lock()
	ss.labels = labels
	ss.mu.Unlock()
	ss.runner = r
	return nil
}

// KindSkill is the kind of the event that reports a skill dropped at load.
const KindSkill loop.Kind = "SKILL"

func toolOf(c *contract.Contract, name string) *contract.Tool {
	if c == nil {
		return nil
	}
	return c.Tools[name]
}

// SessionList is a page of the tenant's sessions, newest first; Next, when
// set, is the cursor of the next page (?after=).
type SessionList struct {
	Sessions []SessionSummary `json:"sessions"`
	Next     string           `json:"next,omitempty"`
}

// SessionSummary is a session as a listing shows it.
type SessionSummary struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// Listing bounds.
const (
	defaultSessionPage = 50
	maxSessionPage     = 200
)

// listSessions pages through the tenant's sessions, from the directory:
// on any instance, whoever owns them.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, tenant string) error {
	q := r.URL.Query()
	for k := range q {
		if k != "limit" && k != "after" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
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
	list, err := s.dir.Sessions(r.Context(), tenant, after, limit)
	if err != nil {
		s.log.Error("session listing failed", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	out := SessionList{Sessions: []SessionSummary{}}
	for _, ss := range list {
		out.Sessions = append(out.Sessions, SessionSummary{ID: ss.ID, Created: ss.Created})
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
	if !ss.tryRun() {
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
	res.Task = *t
	ss.mu.Unlock()
	return runAnswer{res: res}
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
	if !ss.tryRun() {
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
	if !ss.tryRun() {
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
	}
	if err := decode(w, r, maxBody, &req); err != nil {
		return err
	}
	d := loop.Decision(req.Decision)
	if d != loop.Confirm && d != loop.Reject && d != loop.Cancel {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "decision must be CONFIRM, REJECT or CANCEL")
	}
	wait, err := parseWait(r, waitFor{forever: true})
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
	if !ss.tryRun() {
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
