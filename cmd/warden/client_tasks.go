package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/client"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/loop"
)

// waitsFor is what a suspended task waits for: its kind, and the
// approval's id.
func waitsFor(t client.Task) string {
	if t.Status != "SUSPENDED" || t.Suspension == nil {
		return ""
	}
	if t.Approval != "" {
		return t.Suspension.Kind + " " + t.Approval
	}
	return t.Suspension.Kind
}

// runResult prints how a task of session stands after a call that ran it.
func (c *apiClient) runResult(session string, res *client.RunResult, err error) error {
	if done, err := printed(c, res, err); done || err != nil {
		return err
	}
	c.describeTask(session, res.Task, res.Approval)
	return nil
}

// describeTask prints a task's status and what comes next: its output or
// reason, or what it waits for and the command that answers it.
func (c *apiClient) describeTask(session string, t client.Task, ap *client.Approval) {
	head := "task " + t.ID + " " + t.Status
	if t.Node != "" && t.Status == "SUSPENDED" {
		head += " at node " + t.Node
	}
	fmt.Fprintln(c.stdout, head)
	var pairs []string
	switch t.Status {
	case "RUNNING":
		pairs = append(pairs, "follow", "warden tasks watch "+session+" "+t.ID)
	case "SUSPENDED":
		if s := t.Suspension; s != nil {
			pairs = append(pairs, "waits for", s.Kind, "question", s.Question)
			switch s.Kind {
			case "APPROVAL":
				// The arguments are printed from the approval only, whose
				// summary masks sensitive values.
				id, tool, args := t.Approval, s.Tool, ""
				if ap != nil {
					id, tool, args = ap.ID, ap.Tool, arguments(ap)
				}
				pairs = append(pairs, "approval", id, "tool", tool, "arguments", args,
					"answer", "warden approvals confirm|reject|cancel "+id)
			case "FOLLOW_UP":
				pairs = append(pairs, "expects", strings.Join(s.ExpectedFields, ", "),
					"answer", "warden tasks follow-up "+session+" "+t.ID+" ANSWER")
			case "VERIFY":
				pairs = append(pairs, "tool", s.Tool,
					"answer", "warden tasks verify "+session+" "+t.ID+" [--took yes|no]")
			}
		}
	}
	reply := t.Reply
	if reply == t.Output || reply == t.Reason {
		reply = ""
	}
	pairs = append(pairs, "output", t.Output, "reason", t.Reason, "reply", reply)
	c.fields(pairs...)
}

// compactJSON is a JSON value on one line; empty for none.
func compactJSON(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var x any
	if json.Unmarshal(v, &x) != nil || enc.Encode(x) != nil {
		return string(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type waitOpts struct{ wait *time.Duration }

// waitFlag is --wait for the answers that run a task on: the API's
// synchronous default, unless given.
func waitFlag(fs *flag.FlagSet) any { return &waitOpts{wait: fs.Duration("wait", 0, "")} }

// duration is the wait the flag asks for: 0 for the API's default.
func (o *waitOpts) duration() (time.Duration, error) {
	if *o.wait < 0 || *o.wait > maxSendWait {
		return 0, usagef("--wait %s is not between 0 and %s", *o.wait, maxSendWait)
	}
	return *o.wait, nil
}

type verifyOpts struct {
	waitOpts
	took *string
}

var taskCommands = map[string]clientCommand{
	"show":  {args: "SESSION TASK", help: "show a task: its status, output, or what it waits for", nargs: 2, run: tasksShow},
	"trace": {args: "SESSION TASK", help: "print a task's trace events", nargs: 2, run: tasksTrace},
	"watch": {args: "SESSION TASK", nargs: 2, run: tasksWatch,
		help: "print a task's trace events as they happen (server-sent events) until it settles; --json prints one event a line"},
	"follow-up": {args: "[--wait DURATION] SESSION TASK ANSWER...", nargs: -1, flags: waitFlag, run: tasksFollowUp,
		help: "answer the question a task waits for (FOLLOW_UP) and run it on"},
	"verify": {args: "[--took yes|no] [--wait DURATION] SESSION TASK", nargs: 2, run: tasksVerify,
		help: "settle a write the task waits to verify: by its verify tool, or as you say it took effect or not",
		flags: func(fs *flag.FlagSet) any {
			return &verifyOpts{waitOpts: waitOpts{wait: fs.Duration("wait", 0, "")}, took: fs.String("took", "", "")}
		}},
	"resume": {args: "[--wait DURATION] SESSION TASK", nargs: 2, flags: waitFlag, run: tasksResume,
		help: "run on a task a dead process left RUNNING"},
}

func tasksShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	t, err := c.api.Task(ctx, args[0], args[1])
	if done, err := printed(c, t, err); done || err != nil {
		return err
	}
	c.describeTask(args[0], *t, c.approval(ctx, *t))
	return nil
}

// approval is the approval a task waits for, for its masked argument
// summary; nil when it waits for none or cannot be read.
func (c *apiClient) approval(ctx context.Context, t client.Task) *client.Approval {
	if t.Approval == "" || t.Status != "SUSPENDED" {
		return nil
	}
	a, err := c.api.Approval(ctx, t.Approval)
	if err != nil {
		return nil
	}
	return a
}

func tasksTrace(ctx context.Context, c *apiClient, args []string, _ any) error {
	tr, err := c.api.Trace(ctx, args[0], args[1])
	if done, err := printed(c, tr, err); done || err != nil {
		return err
	}
	if len(tr.Events) == 0 {
		fmt.Fprintln(c.stdout, "no events")
	}
	for _, e := range tr.Events {
		fmt.Fprintln(c.stdout, printable(scenario.FormatEvent(e)))
	}
	return nil
}

// watchPoll is how often watch asks for the task while it follows the
// stream: a run settles after its last event, so the stream alone cannot
// say when it has.
const watchPoll = 250 * time.Millisecond

// A stream that drops is opened again after watchRetry, from the last
// event it brought, up to watchRetries times in a row.
const (
	watchRetry   = 500 * time.Millisecond
	watchRetries = 5
)

// streamItem is one event of a stream (its data), or how the stream ended.
type streamItem struct {
	data []byte
	err  error
}

// readEvents sends the data of each complete server-sent event body
// holds, then how the stream ended; an event cut by the end is dropped.
func readEvents(ctx context.Context, body io.ReadCloser, out chan<- streamItem) {
	defer body.Close()
	send := func(it streamItem) bool {
		select {
		case out <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 && !send(streamItem{data: []byte(strings.Join(data, "\n"))}) {
				return
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	err := sc.Err()
	if err == nil {
		err = errors.New("the server closed the event stream")
	}
	send(streamItem{err: err})
}

// tasksWatch follows the session's event stream, printing the task's
// events, until the task is no longer RUNNING; then it prints the events
// the stream had not brought yet and how the task stands. A stream that
// drops is followed again from where it stopped.
func tasksWatch(ctx context.Context, c *apiClient, args []string, _ any) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &watch{c: c, session: args[0], task: args[1]}
	if _, err := c.api.Task(ctx, w.session, w.task); err != nil {
		return err
	}
	events, err := w.open(ctx)
	if err != nil {
		return err
	}
	drops := 0
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		select {
		case it := <-events:
			if it.err == nil {
				drops = 0
				if err := w.show(it.data); err != nil {
					return err
				}
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if events, err = w.reopen(ctx, it.err, &drops); err != nil {
				return err
			}
			continue
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		t, err := c.api.Task(ctx, w.session, w.task)
		if err != nil {
			return err
		}
		if t.Status != "RUNNING" {
			return w.settled(ctx, *t)
		}
	}
}

// watch is one task's watch: the events it has seen and printed.
type watch struct {
	c             *apiClient
	session, task string
	// seen is the last event the stream brought, of any task; last the
	// last one printed.
	seen, last int64
}

// open opens the session's event stream after the last event seen.
func (w *watch) open(ctx context.Context) (<-chan streamItem, error) {
	body, err := w.c.api.Events(ctx, w.session, w.seen)
	if err != nil {
		return nil, err
	}
	ch := make(chan streamItem)
	go readEvents(ctx, body, ch)
	return ch, nil
}

// reopen opens a stream that dropped (with cause) again from the last
// event, while the server answers; a refusal ends the watch, and so do
// more than watchRetries drops in a row.
func (w *watch) reopen(ctx context.Context, cause error, drops *int) (<-chan streamItem, error) {
	for {
		if *drops++; *drops > watchRetries {
			return nil, fmt.Errorf("watch %s %s: %w", w.session, w.task, cause)
		}
		select {
		case <-time.After(watchRetry):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		events, err := w.open(ctx)
		var ar *client.APIError
		if errors.As(err, &ar) {
			return nil, err
		} else if err != nil {
			cause = err
			continue
		}
		return events, nil
	}
}

// show prints an event of the task not printed yet.
func (w *watch) show(data []byte) error {
	var e loop.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("an event of the stream is not JSON: %w", err)
	}
	w.seen = max(w.seen, e.Seq)
	if e.Task != w.task || e.Seq <= w.last {
		return nil
	}
	w.last = e.Seq
	if w.c.json {
		w.c.printRaw(data)
	} else {
		fmt.Fprintln(w.c.stdout, printable(scenario.FormatEvent(e)))
	}
	return nil
}

// settled prints the events of the settled task's trace the stream had not
// brought (the trace holds every event the run made), and how it stands.
func (w *watch) settled(ctx context.Context, t client.Task) error {
	tr, err := w.c.api.Trace(ctx, w.session, w.task)
	if tr == nil {
		return err
	}
	var raw struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(tr.Raw, &raw); err != nil {
		return fmt.Errorf("the trace of %s %s is not what the client reads: %w", w.session, w.task, err)
	}
	for _, e := range raw.Events {
		if err := w.show(e); err != nil {
			return err
		}
	}
	if !w.c.json {
		w.c.describeTask(w.session, t, w.c.approval(ctx, t))
	}
	return nil
}

func tasksFollowUp(ctx context.Context, c *apiClient, args []string, opts any) error {
	if len(args) < 3 {
		return usagef("want a session, a task and the answer")
	}
	wait, err := opts.(*waitOpts).duration()
	if err != nil {
		return err
	}
	res, err := c.api.FollowUp(ctx, args[0], args[1], strings.Join(args[2:], " "), wait)
	return c.runResult(args[0], res, err)
}

func tasksVerify(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*verifyOpts)
	wait, err := o.duration()
	if err != nil {
		return err
	}
	var took *bool
	switch strings.ToLower(*o.took) {
	case "":
	case "yes", "true":
		took = new(true)
	case "no", "false":
		took = new(false)
	default:
		return usagef("--took %q: say yes or no", *o.took)
	}
	res, err := c.api.Verify(ctx, args[0], args[1], took, wait)
	return c.runResult(args[0], res, err)
}

func tasksResume(ctx context.Context, c *apiClient, args []string, opts any) error {
	wait, err := opts.(*waitOpts).duration()
	if err != nil {
		return err
	}
	res, err := c.api.Resume(ctx, args[0], args[1], wait)
	return c.runResult(args[0], res, err)
}
