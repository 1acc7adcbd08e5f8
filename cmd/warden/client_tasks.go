package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/loop"
)

// apiTask is a task as the API shows it: the fields the client prints.
type apiTask struct {
	ID         string `json:"id"`
	Objective  string `json:"objective"`
	Status     string `json:"status"`
	Node       string `json:"node"`
	Suspension *struct {
		Kind           string          `json:"kind"`
		Question       string          `json:"question"`
		ExpectedFields []string        `json:"expectedFields"`
		Tool           string          `json:"tool"`
		Args           json.RawMessage `json:"args"`
	} `json:"suspension"`
	Approval string `json:"approval"`
	Output   string `json:"output"`
	Reason   string `json:"reason"`
	Reply    string `json:"reply"`
}

// waitsFor is what a suspended task waits for: its kind, and the
// approval's id.
func (t apiTask) waitsFor() string {
	if t.Status != "SUSPENDED" || t.Suspension == nil {
		return ""
	}
	if t.Approval != "" {
		return t.Suspension.Kind + " " + t.Approval
	}
	return t.Suspension.Kind
}

// runResult is what a run's POST answers: the task, and the approval it
// now waits for.
type runResult struct {
	Task     apiTask      `json:"task"`
	Approval *apiApproval `json:"approval"`
}

// runResult sends a request that runs a task of session and prints how
// the task stands after it.
func (c *apiClient) runResult(ctx context.Context, session string, r request) error {
	var res runResult
	if printed, err := c.call(ctx, r, &res); printed || err != nil {
		return err
	}
	c.describeTask(session, res.Task, res.Approval)
	return nil
}

// describeTask prints a task's status and what comes next: its output or
// reason, or what it waits for and the command that answers it.
func (c *apiClient) describeTask(session string, t apiTask, ap *apiApproval) {
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
					id, tool, args = ap.ID, ap.Tool, ap.arguments()
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

func (o *waitOpts) query() (url.Values, error) {
	q := url.Values{}
	if *o.wait < 0 || *o.wait > maxSendWait {
		return nil, usagef("--wait %s is not between 0 and %s", *o.wait, maxSendWait)
	}
	if *o.wait > 0 {
		q.Set("wait", o.wait.String())
	}
	return q, nil
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

func taskPath(args []string) string {
	return "/v1/sessions/" + pathID(args[0]) + "/tasks/" + pathID(args[1])
}

func tasksShow(ctx context.Context, c *apiClient, args []string, _ any) error {
	var t apiTask
	if printed, err := c.get(ctx, taskPath(args), nil, &t); printed || err != nil {
		return err
	}
	c.describeTask(args[0], t, c.approval(ctx, t))
	return nil
}

// approval is the approval a task waits for, for its masked argument
// summary; nil when it waits for none or cannot be read.
func (c *apiClient) approval(ctx context.Context, t apiTask) *apiApproval {
	if t.Approval == "" || t.Status != "SUSPENDED" {
		return nil
	}
	var a apiApproval
	if _, b, err := c.send(ctx, request{method: http.MethodGet, path: "/v1/approvals/" + pathID(t.Approval)}); err != nil || json.Unmarshal(b, &a) != nil {
		return nil
	}
	return &a
}

type traceAnswer struct {
	Task   string       `json:"task"`
	Events []loop.Event `json:"events"`
}

func tasksTrace(ctx context.Context, c *apiClient, args []string, _ any) error {
	var tr traceAnswer
	if printed, err := c.get(ctx, taskPath(args)+"/trace", nil, &tr); printed || err != nil {
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
	path := taskPath(args)
	task := func() (apiTask, error) {
		var t apiTask
		_, b, err := c.send(ctx, request{method: http.MethodGet, path: path})
		if err == nil {
			err = json.Unmarshal(b, &t)
		}
		return t, err
	}
	if _, err := task(); err != nil {
		return err
	}
	// seen is the last event the stream brought, of any task; last the
	// last one printed.
	var seen, last int64
	open := func() (<-chan streamItem, error) {
		q := url.Values{}
		if seen > 0 {
			q.Set("after", strconv.FormatInt(seen, 10))
		}
		resp, err := c.open(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(args[0]) + "/events", query: q,
			header: http.Header{"Accept": {"text/event-stream"}}})
		if err != nil {
			return nil, err
		}
		ch := make(chan streamItem)
		go readEvents(ctx, resp.Body, ch)
		return ch, nil
	}
	events, err := open()
	if err != nil {
		return err
	}
	show := func(data []byte) error {
		var e loop.Event
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("an event of the stream is not JSON: %w", err)
		}
		seen = max(seen, e.Seq)
		if e.Task != args[1] || e.Seq <= last {
			return nil
		}
		last = e.Seq
		if c.json {
			c.printRaw(data)
		} else {
			fmt.Fprintln(c.stdout, printable(scenario.FormatEvent(e)))
		}
		return nil
	}
	drops := 0
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		select {
		case it := <-events:
			if it.err == nil {
				drops = 0
				if err := show(it.data); err != nil {
					return err
				}
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Dropped: open it again from the last event, while the
			// server answers; a refusal ends the watch.
			for events = nil; events == nil; {
				if drops++; drops > watchRetries {
					return fmt.Errorf("watch %s %s: %w", args[0], args[1], it.err)
				}
				select {
				case <-time.After(watchRetry):
				case <-ctx.Done():
					return ctx.Err()
				}
				var ar *apiRefusal
				if events, err = open(); errors.As(err, &ar) {
					return err
				} else if err != nil {
					it.err = err
				}
			}
			continue
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		t, err := task()
		if err != nil {
			return err
		}
		if t.Status == "RUNNING" {
			continue
		}
		// Settled: the trace holds every event the run made.
		_, b, err := c.send(ctx, request{method: http.MethodGet, path: path + "/trace"})
		if err != nil {
			return err
		}
		var tr struct {
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(b, &tr); err != nil {
			return fmt.Errorf("the trace of %s %s is not what the client reads: %w", args[0], args[1], err)
		}
		for _, e := range tr.Events {
			if err := show(e); err != nil {
				return err
			}
		}
		if !c.json {
			c.describeTask(args[0], t, c.approval(ctx, t))
		}
		return nil
	}
}

func tasksFollowUp(ctx context.Context, c *apiClient, args []string, opts any) error {
	if len(args) < 3 {
		return usagef("want a session, a task and the answer")
	}
	q, err := opts.(*waitOpts).query()
	if err != nil {
		return err
	}
	r := jsonRequest(http.MethodPost, taskPath(args)+"/follow-up", q, map[string]string{"answer": strings.Join(args[2:], " ")})
	return c.runResult(ctx, args[0], r)
}

func tasksVerify(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*verifyOpts)
	q, err := o.query()
	if err != nil {
		return err
	}
	body := map[string]bool{}
	switch strings.ToLower(*o.took) {
	case "":
	case "yes", "true":
		body["took"] = true
	case "no", "false":
		body["took"] = false
	default:
		return usagef("--took %q: say yes or no", *o.took)
	}
	return c.runResult(ctx, args[0], jsonRequest(http.MethodPost, taskPath(args)+"/verify", q, body))
}

func tasksResume(ctx context.Context, c *apiClient, args []string, opts any) error {
	q, err := opts.(*waitOpts).query()
	if err != nil {
		return err
	}
	return c.runResult(ctx, args[0], request{method: http.MethodPost, path: taskPath(args) + "/resume", query: q})
}
