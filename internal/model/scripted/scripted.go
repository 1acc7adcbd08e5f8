package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/model"
)

// Turn is one scripted assistant turn: text, tool calls, both, or a failure.
type Turn struct {
	// Expect, if set, must hold for the conversation before this turn plays.
	Expect *Expect `json:"expect,omitempty"`
	// Text is the assistant's text.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls of this turn, in order.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// Fail, if set, makes Complete return an error wrapping
	// ErrScriptedFailure with this text instead of a turn, as a provider
	// outage would.
	Fail string `json:"fail,omitempty"`
}

// Call is one scripted tool call.
type Call struct {
	// ID, when set, is the call's id instead of call_<turn>_<n>: a script
	// can repeat one, as a faulty provider does.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is the raw argument text handed to the loop.
	Arguments string `json:"arguments"`
}

// UnmarshalJSON reads "arguments" as raw text: a JSON string gives its
// value, any other JSON value its JSON text. Unknown keys are refused.
func (c *Call) UnmarshalJSON(data []byte) error {
	var w struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return err
	}
	c.ID, c.Name, c.Arguments = w.ID, w.Name, ""
	raw := bytes.TrimSpace(w.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &c.Arguments)
	}
	c.Arguments = string(raw)
	return nil
}

// Expect is what the last tool message of the conversation must show. Empty
// fields are not checked.
type Expect struct {
	// Tool is the name of the tool whose call the last tool message answers.
	Tool string `json:"tool,omitempty"`
	// Outcome is the observation's "outcome" (SUCCESS, FAILED, REJECTED,
	// DEFERRED).
	Outcome string `json:"outcome,omitempty"`
	// Code matches the observation's "code" (e.g. "APPROVAL_REQUIRED") or
	// its "wire" form (e.g. "agent_runtime.42221").
	Code string `json:"code,omitempty"`
	// Contains must be a substring of the tool message's content.
	Contains string `json:"contains,omitempty"`
}

// Observed is what the host knows of an observation beyond the tool
// message's text: the loop writes only Message() as the tool message
// (TOOL_OBSERVATION §6), so outcome and code travel beside it.
type Observed struct {
	// Outcome is SUCCESS, FAILED, REJECTED or DEFERRED.
	Outcome string
	// Code is the code's name ("APPROVAL_REQUIRED"), Wire its wire form
	// ("agent_runtime.42221"); both empty for a success.
	Code string
	Wire string
}

// Observer reports the observation that the tool message answering callID
// carries; ok is false when the host knows of none.
type Observer func(callID string) (o Observed, ok bool)

// Model replays a script. It is safe for concurrent use; turns are handed
// out in order.
type Model struct {
	mu       sync.Mutex
	turns    []Turn
	next     int
	observer Observer
}

// SetObserver makes Expect.Outcome and Expect.Code match what o reports for
// the last tool message, instead of reading JSON from its text. A scenario
// runner sets it before the first Complete.
func (m *Model) SetObserver(o Observer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observer = o
}

var _ model.Model = (*Model)(nil)

// Parse decodes a script from a JSON array of turns, refusing unknown keys,
// and validates it. The error wraps ErrInvalidScript.
func Parse(data []byte) ([]Turn, error) {
	var turns []Turn
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&turns); err != nil {
		return nil, fmt.Errorf("model/scripted: %w: %w", ErrInvalidScript, err)
	}
	if d.More() {
		return nil, fmt.Errorf("model/scripted: %w: data after the turn list", ErrInvalidScript)
	}
	if err := validate(turns); err != nil {
		return nil, err
	}
	return turns, nil
}

// New returns a Model that plays turns in order. The error wraps
// ErrInvalidScript.
func New(turns []Turn) (*Model, error) {
	if err := validate(turns); err != nil {
		return nil, err
	}
	return &Model{turns: append([]Turn(nil), turns...)}, nil
}

func validate(turns []Turn) error {
	for i, t := range turns {
		n := i + 1
		switch {
		case t.Fail != "" && (t.Text != "" || len(t.ToolCalls) > 0):
			return fmt.Errorf("model/scripted: %w: turn %d: a failing turn has text or tool calls", ErrInvalidScript, n)
		case t.Fail == "" && t.Text == "" && len(t.ToolCalls) == 0:
			return fmt.Errorf("model/scripted: %w: turn %d: no text, tool calls or failure", ErrInvalidScript, n)
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("model/scripted: %w: turn %d: tool call %d has no name", ErrInvalidScript, n, j+1)
			}
		}
		if e := t.Expect; e != nil && *e == (Expect{}) {
			return fmt.Errorf("model/scripted: %w: turn %d: empty expectation", ErrInvalidScript, n)
		}
	}
	return nil
}

// Remaining returns how many turns are left to play; a scenario that ends
// with turns left did not go as scripted.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns) - m.next
}

// Complete returns the next turn. It checks req's shape and the turn's
// expectation first; a turn whose expectation fails is not consumed.
func (m *Model) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, fmt.Errorf("model/scripted: %w", err)
	}
	if err := req.Validate(); err != nil {
		return model.Response{}, fmt.Errorf("model/scripted: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= len(m.turns) {
		return model.Response{}, fmt.Errorf("model/scripted: %w: all %d turns played", ErrExhausted, len(m.turns))
	}
	n := m.next + 1
	t := m.turns[m.next]
	if t.Expect != nil {
		if err := check(*t.Expect, req.Messages, m.observer); err != nil {
			return model.Response{}, fmt.Errorf("model/scripted: turn %d: %w: %s", n, ErrDiverged, err)
		}
	}
	m.next++
	if t.Fail != "" {
		return model.Response{}, fmt.Errorf("model/scripted: turn %d: %w: %s", n, ErrScriptedFailure, t.Fail)
	}
	resp := model.Response{
		Message:      model.Message{Role: model.RoleAssistant, Content: t.Text},
		FinishReason: model.FinishStop,
	}
	for j, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(j+1)
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, model.ToolCall{ID: id, Name: c.Name, Arguments: c.Arguments})
	}
	if len(t.ToolCalls) > 0 {
		resp.FinishReason = model.FinishToolCalls
	}
	return resp, nil
}

// check returns why e does not hold for the last tool message of ms. With
// an observer, outcome and code come from it; without one, from the
// message's JSON (a conversation recorded by a host that sends JSON).
func check(e Expect, ms []model.Message, observe Observer) error {
	last := -1
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == model.RoleTool {
			last = i
			break
		}
	}
	if last < 0 {
		return fmt.Errorf("expected an observation, the conversation has no tool message")
	}
	msg := ms[last]
	tool := toolName(ms[:last], msg.ToolCallID)
	where := fmt.Sprintf("last observation (tool %q, call %q)", tool, msg.ToolCallID)
	if e.Tool != "" && e.Tool != tool {
		return fmt.Errorf("%s answers tool %q, script expects %q", where, tool, e.Tool)
	}
	if e.Outcome != "" || e.Code != "" {
		var obs Observed
		if observe != nil {
			o, ok := observe(msg.ToolCallID)
			if !ok {
				return fmt.Errorf("%s: the host reports no observation for it", where)
			}
			obs = o
		} else {
			var j struct {
				Outcome string `json:"outcome"`
				Code    string `json:"code"`
				Wire    string `json:"wire"`
			}
			if err := json.Unmarshal([]byte(msg.Content), &j); err != nil {
				return fmt.Errorf("%s is not a JSON observation (%v): %q", where, err, msg.Content)
			}
			obs = Observed(j)
		}
		if e.Outcome != "" && e.Outcome != obs.Outcome {
			return fmt.Errorf("%s has outcome %q, script expects %q", where, obs.Outcome, e.Outcome)
		}
		if e.Code != "" && e.Code != obs.Code && e.Code != obs.Wire {
			return fmt.Errorf("%s has code %q, script expects %q", where, obs.Code, e.Code)
		}
	}
	if e.Contains != "" && !strings.Contains(msg.Content, e.Contains) {
		return fmt.Errorf("%s does not contain %q: %q", where, e.Contains, msg.Content)
	}
	return nil
}

// toolName returns the name of the call with id among the assistant messages
// of ms, or "" when none has it.
func toolName(ms []model.Message, id string) string {
	for i := len(ms) - 1; i >= 0; i-- {
		for _, c := range ms[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}
