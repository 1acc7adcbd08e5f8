// Package feedback turns the loop's TOOL trace events into the structured
// feedback records of TOOL_USE_RELIABILITY §4 and summarises them per tool
// and per error category.
//
// A Sink turns one session's events into records. A Sink from NewSink
// appends them as JSON lines to a writer (warden run --feedback), and Read
// parses such a file back. A Sink from Recorder.Sink hands them to the
// Recorder, which stores them in a Store (warden serve) from a goroutine
// of its own, so that the loop never waits for the database; the Store's
// Feedback reads them back. Summarize says which tools and categories
// cause the most stalls.
//
// Every call that ran is recorded, successes too, not only the failed and
// retried calls §4.2 requires a record of: §4.1 gives every call a signal
// weight, a success the highest, and Summarize's calls, successes and
// weights per tool would be wrong without them.
package feedback

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/loop"
)

// Signal weights of TOOL_USE_RELIABILITY §4.1.
const (
	// WeightSuccess is the weight of a call whose result was a success.
	WeightSuccess = 1.5
	// WeightRecoverable is the weight of a recoverable error that led to a
	// retry or a change while the node carried on.
	WeightRecoverable = 1.0
	// WeightUnrecoverable is the weight of an unrecoverable error, or of a
	// failure that ended the node (retry budget spent): a person must look.
	WeightUnrecoverable = 0.0
)

// Final results of a call (§4.2 最终结果).
const (
	// ResultSuccess: the call succeeded.
	ResultSuccess = "success"
	// ResultRetrying: the call failed and the node carried on to retry or
	// change course.
	ResultRetrying = "retrying"
	// ResultDeferred: a prerequisite step (approval, verification) comes first.
	ResultDeferred = "deferred"
	// ResultFailed: the call failed and nothing more will be tried on its
	// own: an unrecoverable error, or the node ended with it.
	ResultFailed = "failed"
)

// Record is one feedback record (TOOL_USE_RELIABILITY §4.2).
type Record struct {
	Time    time.Time `json:"time"`
	Tenant  string    `json:"tenant,omitempty"`
	Session string    `json:"session,omitempty"`
	Task    string    `json:"task,omitempty"`
	Node    string    `json:"node,omitempty"`
	// Step is the trace event's sequence number.
	Step int64  `json:"step"`
	Tool string `json:"tool"`
	// ArgsDigest is the call's argument digest, when the Sink was given one.
	ArgsDigest string `json:"args_digest,omitempty"`
	// Output is the model's output for the call (its tool call as the
	// model gave it), when the Sink was given one.
	Output string `json:"output,omitempty"`
	// Outcome is SUCCESS, FAILED, REJECTED or DEFERRED.
	Outcome string `json:"outcome"`
	// Message is the observation the model was shown.
	Message string `json:"message,omitempty"`
	// Code (wire form), Name and Category describe the error, if any.
	Code        string `json:"code,omitempty"`
	Name        string `json:"name,omitempty"`
	Category    string `json:"category,omitempty"`
	Recoverable bool   `json:"recoverable,omitempty"`
	// Next is what was done about the error: the code's signal (retry,
	// change, wait, stop), or stop when the node ended with it.
	Next string `json:"next,omitempty"`
	// Status is the node's status after the call.
	Status string `json:"status,omitempty"`
	// Stalls is the node's no-progress count after the call; StallsAdded is
	// how many of them this call contributed (0 or 1).
	Stalls      int `json:"stalls"`
	StallsAdded int `json:"stalls_added"`
	// Result is the final result: success, retrying, deferred or failed.
	Result string  `json:"result"`
	Weight float64 `json:"weight"`
}

// Sink is a loop.Sink that makes a feedback record of every TOOL event of a
// call that ran or was stopped (skipped calls are left out), for one
// session. It writes the records to an io.Writer (NewSink) or queues them
// on a Recorder (Recorder.Sink).
type Sink struct {
	// Tenant and Session are written into every record.
	Tenant  string
	Session string
	// Now stamps records; nil means time.Now.
	Now func() time.Time
	// Digest returns the argument digest of a TOOL event, if known; nil
	// leaves the digest out.
	Digest func(loop.Event) string
	// Output returns the model's output for a TOOL event's call, if known;
	// nil leaves it out.
	Output func(loop.Event) string

	mu     sync.Mutex
	w      io.Writer      // JSON lines, or
	rec    *Recorder      // the Recorder's store
	stalls map[string]int // last Stalls seen per task/node
	err    error
}

// NewSink returns a Sink appending JSON lines to w.
func NewSink(w io.Writer, session string) *Sink {
	return &Sink{w: w, Session: session}
}

// Err returns the first error that cost the sink a record, if any. Emit
// never blocks the loop on an error. A writer that failed once is not
// written again; a Recorder's sink goes on queueing records (the Recorder
// counts and logs the ones it loses).
func (s *Sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// fail keeps err if it is the sink's first.
func (s *Sink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// Emit records e if it is a tool call's observation.
func (s *Sink) Emit(e loop.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalls == nil {
		s.stalls = map[string]int{}
	}
	key := e.Task + "\x00" + e.Node
	prev, seen := s.stalls[key]
	s.stalls[key] = e.Stalls
	if e.Kind != loop.KindTool || e.Outcome == "" || s.rec == nil && s.err != nil {
		return
	}
	r, err := s.record(e, prev, seen)
	if err == nil {
		if s.rec != nil {
			err = s.rec.enqueue(s, r)
		} else {
			err = s.write(r)
		}
	}
	if err == nil {
		return
	}
	if s.err == nil {
		s.err = err
	}
	if s.rec != nil {
		s.rec.lose(1, err, s.Tenant, s.Session)
	}
}

// record builds e's record with the sink's stamps.
func (s *Sink) record(e loop.Event, prev int, seen bool) (Record, error) {
	r, err := FromEvent(e, prev, seen)
	if err != nil {
		return r, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	r.Time = now().UTC()
	r.Tenant, r.Session = s.Tenant, s.Session
	if s.Digest != nil {
		r.ArgsDigest = s.Digest(e)
	}
	if s.Output != nil {
		r.Output = s.Output(e)
	}
	return r, nil
}

// write appends r to the sink's writer as one JSON line.
func (s *Sink) write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("feedback: %w", err)
	}
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("feedback: write: %w", err)
	}
	return nil
}

// FromEvent builds the record of a TOOL event (without time, session and
// digest). prevStalls is the node's no-progress count before the event,
// when seen is true; otherwise the outcome alone says whether it stalled.
func FromEvent(e loop.Event, prevStalls int, seen bool) (Record, error) {
	o, err := abi.ParseOutcome(e.Outcome)
	if err != nil {
		return Record{}, fmt.Errorf("feedback: step %d: %w", e.Seq, err)
	}
	r := Record{
		Task: e.Task, Node: e.Node, Step: e.Seq, Tool: e.Tool,
		Outcome: e.Outcome, Message: e.Message,
		Code: e.Code, Name: e.Name, Category: e.Category,
		Status: e.Status, Stalls: e.Stalls,
	}
	if e.Code != "" {
		if c, err := abi.ParseCode(e.Code); err == nil {
			if i, ok := c.Info(); ok {
				r.Recoverable, r.Next = i.Recoverable, string(i.Signal)
				r.Code, r.Name = i.Wire, string(i.Code)
				if r.Category == "" {
					r.Category = string(i.Category)
				}
			}
		}
	}
	switch {
	case seen:
		r.StallsAdded = max(0, e.Stalls-prevStalls)
	case o.Stalls() && e.Stalls > 0:
		r.StallsAdded = 1
	}
	ended := e.Status == "FAILED" || e.Status == "CANCELLED"
	switch o {
	case abi.OutcomeSuccess:
		r.Result, r.Weight, r.Next = ResultSuccess, WeightSuccess, ""
	case abi.OutcomeDeferred:
		r.Result, r.Weight = ResultDeferred, WeightUnrecoverable
		if r.Next == "" {
			r.Next = string(abi.SignalWait)
		}
	default: // FAILED, REJECTED
		retry := r.Next == string(abi.SignalRetry) || r.Next == string(abi.SignalChange)
		if r.Recoverable && retry && !ended {
			r.Result, r.Weight = ResultRetrying, WeightRecoverable
		} else {
			r.Result, r.Weight = ResultFailed, WeightUnrecoverable
		}
		if ended || r.Next == "" {
			r.Next = string(abi.SignalStop)
		}
	}
	return r, nil
}

// Read parses JSON-line feedback records. Blank lines are skipped; a bad
// line is an error naming its line number.
func Read(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("feedback: line %d: %w: %v", n, ErrBadRecord, err)
		}
		if rec.Tool == "" {
			return out, fmt.Errorf("feedback: line %d: %w: no tool", n, ErrBadRecord)
		}
		if _, err := abi.ParseOutcome(rec.Outcome); err != nil {
			return out, fmt.Errorf("feedback: line %d: %w: outcome %q", n, ErrBadRecord, rec.Outcome)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("feedback: read: %w", err)
	}
	return out, nil
}
