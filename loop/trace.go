package loop

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/state"
)

// Kind is the kind of a trace event.
type Kind string

// Event kinds.
const (
	KindTask    Kind = "TASK"
	KindNode    Kind = "NODE"
	KindReact   Kind = "REACT"
	KindTool    Kind = "TOOL"
	KindSuspend Kind = "SUSPEND"
	KindResume  Kind = "RESUME"
	// KindModel records one model turn: its finish reason and usage.
	KindModel Kind = "MODEL"
	// KindGuard records a guard verdict its failure policy set aside: a
	// shadow guard's decision (Status SHADOW), or a fail-open guard's own
	// failure let through (Status FAIL_OPEN). Outcome, Code and Message are
	// the verdict's ("PASS" for a shadow guard that passed).
	KindGuard Kind = "GUARD"
)

// Event is one structured trace record. Empty fields are left out of JSON.
type Event struct {
	Seq  int64  `json:"seq"`
	Task string `json:"task,omitempty"`
	Node string `json:"node,omitempty"`
	Kind Kind   `json:"kind"`
	Tool string `json:"tool,omitempty"`
	// Outcome, Code (wire form, "agent_runtime.42221"), Name (the code's
	// name, "APPROVAL_REQUIRED") and Category describe a tool call's
	// observation.
	Outcome  string `json:"outcome,omitempty"`
	Code     string `json:"code,omitempty"`
	Name     string `json:"name,omitempty"`
	Category string `json:"category,omitempty"`
	Message  string `json:"message,omitempty"`
	// Guard, Plugin and Generation name what decided a TOOL event's
	// observation: the guard's chain position (ArgPolicy, …, or a tenant
	// guard's ref), the plugin's name@version and its slot generation (0
	// outside a slot); for a builtin, Plugin and Generation are the
	// builtin's. Empty when the business tool's own result stands. A GUARD
	// event names the guard its verdict is from.
	Guard      string `json:"guard,omitempty"`
	Plugin     string `json:"plugin,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	// Guards are the guards that ran on a TOOL event's business call, in
	// chain order: each one's phase, plugin and generation, and verdict.
	Guards []GuardRun `json:"guards,omitempty"`
	// Stalls is the no-progress count after the event.
	Stalls int `json:"stalls"`
	// Status is the node's status (NODE, SUSPEND, RESUME), SKIPPED for a
	// call the loop did not run (skipped with the rest of its wave, or of
	// a turn cut by the length limit), a REACT event's note (no_tool_calls,
	// length, refusal, context) or "usage" for a MODEL event.
	Status string `json:"status,omitempty"`
	// Level is WARN for a FAILED outcome and for a failed node, else INFO.
	Level string `json:"level"`
	// Call, Input and ArgsDigest describe the model's call a TOOL event
	// answers: its id, its arguments as the model gave them (cut to
	// maxInput bytes) and the digest of their canonical JSON.
	Call       string `json:"call,omitempty"`
	Input      string `json:"input,omitempty"`
	ArgsDigest string `json:"argsDigest,omitempty"`
	// Sent is the tool message the model was sent for the call (cut to
	// maxSent bytes); Evidence the id of the evidence the call registered.
	Sent     string `json:"sent,omitempty"`
	Evidence string `json:"evidence,omitempty"`
	// Finish is a MODEL event's finish reason; the token counts are the
	// provider's usage of that turn (CachedTokens: the part of the prompt
	// served from its cache).
	Finish           string `json:"finish,omitempty"`
	PromptTokens     int    `json:"promptTokens,omitempty"`
	CompletionTokens int    `json:"completionTokens,omitempty"`
	CachedTokens     int    `json:"cachedTokens,omitempty"`
	// TraceID and SpanID name the span the event happened under (its
	// node's, or its task's), hex, when tracing is on: for the log
	// records of the events, not part of their JSON.
	TraceID string `json:"-"`
	SpanID  string `json:"-"`
}

// maxInput bounds Event.Input; maxSent Event.Sent.
const (
	maxInput = 2048
	maxSent  = 4096
)

// withSent adds the tool message the model was sent, and the call's
// evidence, to a TOOL event.
func withSent(e Event, sent string, ev *abi.EvidenceItem) Event {
	e.Sent = sent
	if len(e.Sent) > maxSent {
		e.Sent = strings.ToValidUTF8(e.Sent[:maxSent], "") + "…"
	}
	if ev != nil {
		e.Evidence = ev.ID
	}
	return e
}

// withCall adds the model's call to a TOOL event.
func withCall(e Event, callID, args string) Event {
	e.Call, e.Input = callID, args
	if len(e.Input) > maxInput {
		e.Input = strings.ToValidUTF8(e.Input[:maxInput], "") + "…"
	}
	if json.Valid([]byte(args)) {
		e.ArgsDigest = state.ArgsDigest([]byte(args))
	}
	return e
}

// Sink receives trace events in order. Emit must not block for long.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Emit calls f.
func (f SinkFunc) Emit(e Event) { f(e) }

// Recorder is a Sink that keeps every event, for tests and replays.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit records e.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events returns the events so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// toolEvent fills an event from an observation.
func toolEvent(e Event, o abi.Observation) Event {
	e.Kind = KindTool
	e.Outcome = o.Outcome.String()
	e.Message = o.Message()
	if i, ok := o.Info(); ok {
		e.Code, e.Name, e.Category = i.Wire, string(i.Code), string(i.Category)
	}
	if o.Outcome == abi.OutcomeFailed {
		e.Level = "WARN"
	}
	return e
}

// GuardRun is one guard's part in a business call, as a TOOL event
// names it: its chain position, phase, the plugin (name@version) and slot
// generation that served it (0 outside a slot), and its verdict ("pass",
// "rewrite" or "<OUTCOME> <CODE>"); Policy is the failure policy (shadow,
// open) that set the verdict aside, if one did.
type GuardRun struct {
	Guard      string `json:"guard"`
	Phase      string `json:"phase"`
	Plugin     string `json:"plugin,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	Verdict    string `json:"verdict"`
	Policy     string `json:"policy,omitempty"`
}

// guardRuns lists a call's guard steps for its TOOL event; nil for none.
func guardRuns(trace []chain.Step) []GuardRun {
	if len(trace) == 0 {
		return nil
	}
	out := make([]GuardRun, len(trace))
	for i, s := range trace {
		out[i] = GuardRun{Guard: s.Guard, Phase: string(s.Phase), Plugin: s.Plugin, Generation: s.Generation,
			Verdict: s.Verdict, Policy: string(s.Policy)}
	}
	return out
}

// withGuards names the guards that ran on a TOOL event's call.
func withGuards(e Event, trace []chain.Step) Event {
	e.Guards = guardRuns(trace)
	return e
}

// decidedBy names the guard step that decided a TOOL event's observation.
func decidedBy(e Event, s *chain.Step) Event {
	if s != nil {
		e.Guard, e.Plugin, e.Generation = s.Guard, s.Plugin, s.Generation
	}
	return e
}

// policyEvents are the GUARD events of a call's steps whose failure policy
// set the guard's verdict aside, in chain order.
func policyEvents(tool, callID string, trace []chain.Step, stalls int) []Event {
	var out []Event
	for _, s := range trace {
		if s.Policy == "" {
			continue
		}
		e := Event{Kind: KindGuard, Tool: tool, Call: callID, Guard: s.Guard, Plugin: s.Plugin, Generation: s.Generation,
			Stalls: stalls, Outcome: "PASS"}
		if s.Policy == host.FailOpen {
			e.Status, e.Level = "FAIL_OPEN", "WARN"
		} else {
			e.Status = "SHADOW"
		}
		if o := s.Observation; o != nil {
			e.Outcome, e.Message = o.Outcome.String(), o.Message()
			if i, ok := o.Info(); ok {
				e.Code, e.Name, e.Category = i.Wire, string(i.Code), string(i.Category)
			}
		} else if s.Verdict == "rewrite" {
			e.Outcome = "REWRITE"
		}
		out = append(out, e)
	}
	return out
}

// String is the guard's part in one line: "<phase> <guard> <plugin> gen
// <generation>: <verdict>" (the plugin and generation when known, the
// policy in brackets when one set the verdict aside).
func (g GuardRun) String() string {
	var b strings.Builder
	b.WriteString(g.Phase + " " + g.Guard)
	if g.Plugin != "" && g.Plugin != g.Guard {
		b.WriteString(" " + g.Plugin)
	}
	if g.Generation != 0 {
		b.WriteString(" gen " + strconv.FormatUint(g.Generation, 10))
	}
	b.WriteString(": " + g.Verdict)
	if g.Policy != "" {
		b.WriteString(" [" + g.Policy + "]")
	}
	return b.String()
}
