package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
)

// FaultKind is what goes wrong with one call.
type FaultKind int

const (
	// None: the call runs normally (after Fault.Delay, if any).
	None FaultKind = iota
	// Timeout: the call blocks until its context is done; the handler does
	// not run.
	Timeout
	// Unreachable: the call fails with chain.ErrUnreachable at once.
	Unreachable
	// Error: the call fails with Fault.Err (chain.ErrIO, chain.ErrRPC,
	// chain.ErrInvalidParams, …), or ErrUnknown when Err is nil.
	Error
	// IsError: the tool reports its own failure (MCP isError) with
	// Fault.Text.
	IsError
	// Business: a normal response whose body says failure: Fault.Body, or
	// {"code":500,"msg":Fault.Text,"data":null}. The handler does not run.
	Business
	// Empty: a normal response with no content, or Fault.Body.
	Empty
	// Partial: the handler runs; the response is Fault.Body, or the
	// handler's body with every JSON array cut to its first half (rounded
	// up).
	Partial
	// CommitThenTimeout: the handler runs — its writes are visible to later
	// reads — and then the call blocks until its context is done.
	CommitThenTimeout
)

var kindNames = [...]string{"none", "timeout", "unreachable", "error", "iserror", "business", "empty", "partial", "commit-then-timeout"}

func (k FaultKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("FaultKind(%d)", int(k))
	}
	return kindNames[k]
}

// Fault is what happens to one attempt.
type Fault struct {
	Kind FaultKind
	// Delay comes before whatever Kind does; a context done during the delay
	// fails the call as a timeout (deadline) or an I/O error (cancel).
	Delay time.Duration
	Err   error
	Text  string
	Body  json.RawMessage
}

// Tool is one scripted tool.
type Tool struct {
	tools.Tool
	// Write marks a tool that changes State; Duplicates looks at these.
	Write   bool
	Handler Handler
	// Faults[i] applies to the tool's call number i+1; later calls run
	// normally.
	Faults []Fault
}

// Call is one recorded call.
type Call struct {
	Tool string
	Args json.RawMessage
	// Attempt counts the calls to Tool, from 1.
	Attempt int
	Fault   FaultKind
}

// Server holds scripted tools, their State and the calls made. It is safe
// for concurrent use.
type Server struct {
	state *State

	mu     sync.Mutex
	tools  map[string]*Tool
	order  []string
	counts map[string]int
	calls  []Call
}

// New returns a Server with the tools over st (a new State when nil). A
// later tool of the same name replaces an earlier one.
func New(st *State, ts ...Tool) *Server {
	if st == nil {
		st = NewState()
	}
	s := &Server{state: st, tools: map[string]*Tool{}, counts: map[string]int{}}
	for _, t := range ts {
		if _, dup := s.tools[t.Name]; !dup {
			s.order = append(s.order, t.Name)
		}
		t := t
		t.Faults = append([]Fault(nil), t.Faults...)
		s.tools[t.Name] = &t
	}
	return s
}

// State returns the tools' data.
func (s *Server) State() *State { return s.state }

// Arm replaces the faults of tool, counted from its next call.
func (s *Server) Arm(tool string, faults ...Fault) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, found := s.tools[tool]
	if !found {
		return fmt.Errorf("%w %q", ErrUnknownTool, tool)
	}
	t.Faults = append(make([]Fault, s.counts[tool]), faults...)
	return nil
}

// ListTools lists the tools in the order given to New.
func (s *Server) ListTools(context.Context) ([]tools.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tools.Tool, 0, len(s.order))
	for _, name := range s.order {
		t := s.tools[name].Tool
		if t.InputSchema == nil {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, t)
	}
	return out, nil
}

// CallTool runs the tool's fault for this attempt, then its handler.
func (s *Server) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	s.mu.Lock()
	t, found := s.tools[name]
	if !found {
		s.calls = append(s.calls, Call{Tool: name, Args: clone(args)})
		s.mu.Unlock()
		return chain.Response{}, fmt.Errorf("%w %q: %w", ErrUnknownTool, name, chain.ErrInvalidParams)
	}
	s.counts[name]++
	attempt := s.counts[name]
	var f Fault
	if attempt <= len(t.Faults) {
		f = t.Faults[attempt-1]
	}
	handler := t.Handler
	s.calls = append(s.calls, Call{Tool: name, Args: clone(args), Attempt: attempt, Fault: f.Kind})
	s.mu.Unlock()

	fail := func(sentinel, cause error) (chain.Response, error) {
		return chain.Response{}, fmt.Errorf("scripted: call %s (attempt %d): %w: %w", name, attempt, sentinel, cause)
	}
	if f.Delay > 0 {
		timer := time.NewTimer(f.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fail(ctxSentinel(ctx), ctx.Err())
		}
	}
	switch f.Kind {
	case Timeout:
		<-ctx.Done()
		return fail(ctxSentinel(ctx), ctx.Err())
	case Unreachable:
		return fail(chain.ErrUnreachable, errInjected)
	case Error:
		if f.Err == nil {
			return chain.Response{}, fmt.Errorf("scripted: call %s (attempt %d): %w", name, attempt, ErrUnknown)
		}
		return fail(f.Err, errInjected)
	case IsError:
		return chain.Response{IsError: true, Text: f.Text}, nil
	case Business:
		body := f.Body
		if body == nil {
			body, _ = json.Marshal(map[string]any{"code": 500, "msg": f.Text, "data": nil})
		}
		return textResponse(body), nil
	case Empty:
		if f.Body == nil {
			return chain.Response{}, nil
		}
		return textResponse(f.Body), nil
	}
	resp := s.run(handler, args)
	switch f.Kind {
	case Partial:
		if f.Body != nil {
			return textResponse(f.Body), nil
		}
		if !resp.IsError {
			return textResponse(halve(resp.Content)), nil
		}
	case CommitThenTimeout:
		<-ctx.Done()
		return fail(ctxSentinel(ctx), ctx.Err())
	}
	return resp, nil
}

// errInjected is the cause under an injected sentinel.
var errInjected = fmt.Errorf("injected fault")

func ctxSentinel(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return chain.ErrTimeout
	}
	return chain.ErrIO
}

func (s *Server) run(h Handler, args json.RawMessage) chain.Response {
	if h == nil {
		return chain.Response{}
	}
	body, err := h(s.state, args)
	if err != nil {
		return chain.Response{IsError: true, Text: err.Error()}
	}
	return textResponse(body)
}

// textResponse is what the MCP adapter makes of a text body: JSON content
// when it parses, else a JSON string.
func textResponse(body json.RawMessage) chain.Response {
	if len(body) == 0 {
		return chain.Response{}
	}
	if json.Valid(body) {
		return chain.Response{Content: body, Text: string(body)}
	}
	b, _ := json.Marshal(string(body))
	return chain.Response{Content: b, Text: string(body)}
}

// halve cuts every JSON array in body to its first half, rounded up.
func halve(body json.RawMessage) json.RawMessage {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return body
	}
	b, err := json.Marshal(cut(v))
	if err != nil {
		return body
	}
	return b
}

func cut(v any) any {
	switch x := v.(type) {
	case []any:
		x = x[:(len(x)+1)/2]
		for i := range x {
			x[i] = cut(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = cut(x[k])
		}
		return x
	}
	return v
}

func clone(b json.RawMessage) json.RawMessage { return append(json.RawMessage(nil), b...) }

// Calls returns every call made, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Count returns how many times tool was called.
func (s *Server) Count(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[tool]
}

// Duplicates returns the write calls that repeat an earlier write call with
// the same tool and the same arguments (compared as JSON values), so a test
// can assert that none happened.
func (s *Server) Duplicates() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []Call
	for _, c := range s.calls {
		t, found := s.tools[c.Tool]
		if !found || !t.Write {
			continue
		}
		key := c.Tool + "\x00" + canonical(c.Args)
		if seen[key] {
			out = append(out, c)
		}
		seen[key] = true
	}
	return out
}

// canonical re-encodes JSON with sorted keys; invalid JSON stays as it is.
func canonical(b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
