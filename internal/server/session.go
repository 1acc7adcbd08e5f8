package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// maxText bounds a user message or follow-up answer, in bytes.
const maxText = 32 << 10

// Event is one trace event as the API shows it: the loop's event plus the
// tool's label from the skill contract.
type Event struct {
	loop.Event
	Label string `json:"label,omitempty"`
	// Time is when the service recorded the event (UTC, milliseconds).
	Time time.Time `json:"time"`
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
	labels toolViews
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
	// secrets are the sensitive argument values the session's calls
	// carried: masked wherever an event or a task would show them.
	secrets []string
	// active is the task a run is on (launch): it shows RUNNING until the
	// run has settled it and freed the session. ending says the run has
	// ended or sent the task's final event; freed is closed when the run
	// frees the session.
	active *Task
	ending bool
	freed  chan struct{}
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
	return ss.maskedLocked(v)
}

// emit numbers a trace event in the session's sequence (which outlives the
// runner that made it), keeps it and stores it. It returns the event as
// numbered, for the other sinks.
func (ss *session) emit(e loop.Event) loop.Event {
	ss.mu.Lock()
	ss.seq++
	e.Seq = ss.seq
	if ss.active != nil && e.Kind == loop.KindTask && e.Task == ss.active.ID && settles(e.Status) {
		ss.ending = true
	}
	e = ss.maskEventLocked(e)
	ev := Event{Event: e, Label: ss.labels[e.Tool].label, Time: time.Now().UTC().Truncate(time.Millisecond)}
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

// takeRun takes the session's run lock for a request. A run that has
// already sent its task's final event (it is storing the task and freeing
// the session) is waited for, up to settleWait: a client that follows the
// events and goes on at the task's end is not refused as busy.
func (ss *session) takeRun(ctx context.Context) bool {
	var timeout <-chan time.Time
	for {
		if ss.tryRun() {
			return true
		}
		ss.mu.Lock()
		freed, ending := ss.freed, ss.active != nil && ss.ending
		ss.mu.Unlock()
		if !ending || freed == nil {
			return false
		}
		if timeout == nil {
			tm := time.NewTimer(settleWait)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// settleWait bounds how long a request waits for a run that is settling.
const settleWait = 5 * time.Second

// settles says whether a TASK event's status ends a run: the task ended
// or waits.
func settles(status string) bool {
	switch state.Status(status) {
	case state.Done, state.Failed, state.Cancelled, state.Suspended:
		return true
	}
	return false
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
	out := slices.Clone(ss.events[i:])
	// An event recorded before a call showed a value sensitive (the
	// user's message, quoted as a node's objective) is masked as read.
	for j := range out {
		out[j].Message = maskText(out[j].Message, ss.secrets)
		out[j].Input = maskText(out[j].Input, ss.secrets)
		out[j].Sent = maskText(out[j].Sent, ss.secrets)
	}
	return out, ss.wake
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
