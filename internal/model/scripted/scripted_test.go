package scripted

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/model"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		want    []Turn
		wantErr string
	}{
		{
			name: "text, calls with string and object arguments, expectation, failure",
			data: `[
			  {"tool_calls": [{"name": "query_site", "arguments": {"space": "s1"}}, {"name": "ping"}]},
			  {"expect": {"tool": "ping", "outcome": "SUCCESS", "code": "X", "contains": "ok"},
			   "tool_calls": [{"name": "create_site", "arguments": "{\"name\": \"Shop\""}]},
			  {"fail": "upstream 503"},
			  {"text": "Done.", "tool_calls": [{"name": "finish", "arguments": null}]}
			]`,
			want: []Turn{
				{ToolCalls: []Call{{Name: "query_site", Arguments: `{"space": "s1"}`}, {Name: "ping"}}},
				{
					Expect:    &Expect{Tool: "ping", Outcome: "SUCCESS", Code: "X", Contains: "ok"},
					ToolCalls: []Call{{Name: "create_site", Arguments: `{"name": "Shop"`}},
				},
				{Fail: "upstream 503"},
				{Text: "Done.", ToolCalls: []Call{{Name: "finish"}}},
			},
		},
		{name: "empty list", data: `[]`, want: []Turn{}},
		{name: "not a list", data: `{"text": "x"}`, wantErr: "model/scripted: invalid script: json: cannot unmarshal object into Go value of type []scripted.Turn"},
		{name: "unknown turn key", data: `[{"txt": "x"}]`, wantErr: `model/scripted: invalid script: json: unknown field "txt"`},
		{name: "unknown call key", data: `[{"tool_calls": [{"name": "a", "args": "{}"}]}]`, wantErr: `model/scripted: invalid script: json: unknown field "args"`},
		{name: "unknown expect key", data: `[{"text": "x", "expect": {"cod": "X"}}]`, wantErr: `model/scripted: invalid script: json: unknown field "cod"`},
		{name: "trailing data", data: `[] []`, wantErr: "model/scripted: invalid script: data after the turn list"},
		{name: "empty turn", data: `[{"text": "a"}, {}]`, wantErr: "model/scripted: invalid script: turn 2: no text, tool calls or failure"},
		{name: "call without name", data: `[{"tool_calls": [{"name": "a"}, {"arguments": "{}"}]}]`, wantErr: "model/scripted: invalid script: turn 1: tool call 2 has no name"},
		{name: "failure with text", data: `[{"fail": "x", "text": "y"}]`, wantErr: "model/scripted: invalid script: turn 1: a failing turn has text or tool calls"},
		{name: "empty expectation", data: `[{"text": "y", "expect": {}}]`, wantErr: "model/scripted: invalid script: turn 1: empty expectation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Parse error = %v, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidScript) {
					t.Errorf("errors.Is(err, ErrInvalidScript) = false")
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// observation builds a tool message the way the loop renders observations.
func observation(id, content string) model.Message {
	return model.Message{Role: model.RoleTool, ToolCallID: id, Content: content}
}

func TestCompleteReplays(t *testing.T) {
	t.Parallel()
	m, err := New([]Turn{
		{ToolCalls: []Call{{Name: "query_site", Arguments: `{"space":"s1"}`}, {Name: "create_site", Arguments: `{"name":`}}},
		{Expect: &Expect{Tool: "create_site", Outcome: "REJECTED", Code: "agent_runtime.40001"}, Text: "Let me fix that."},
		{Text: "Done."},
	})
	if err != nil {
		t.Fatal(err)
	}
	conv := []model.Message{{Role: model.RoleUser, Content: "Create a shop site."}}
	steps := []struct {
		add     []model.Message
		want    model.Response
		wantErr string
	}{
		{
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_1_1", Name: "query_site", Arguments: `{"space":"s1"}`},
					{ID: "call_1_2", Name: "create_site", Arguments: `{"name":`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			add: []model.Message{
				observation("call_1_1", `{"outcome":"SUCCESS","text":"0 sites"}`),
				observation("call_1_2", `{"outcome":"REJECTED","code":"ARGS_INVALID_JSON","wire":"agent_runtime.40001"}`),
			},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "Let me fix that."},
				FinishReason: model.FinishStop,
			},
		},
		{
			add: []model.Message{{Role: model.RoleUser, Content: "ok"}},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "Done."},
				FinishReason: model.FinishStop,
			},
		},
		{
			add:     []model.Message{{Role: model.RoleUser, Content: "more?"}},
			wantErr: "model/scripted: script exhausted: all 3 turns played",
		},
	}
	for i, s := range steps {
		conv = append(conv, s.add...)
		got, err := m.Complete(context.Background(), model.Request{Messages: conv})
		if s.wantErr != "" {
			if err == nil || err.Error() != s.wantErr {
				t.Fatalf("step %d: error = %v, want %q", i, err, s.wantErr)
			}
			if !errors.Is(err, ErrExhausted) {
				t.Errorf("step %d: errors.Is(err, ErrExhausted) = false", i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d:\n got %#v\nwant %#v", i, got, s.want)
		}
		conv = append(conv, got.Message)
	}
	if r := m.Remaining(); r != 0 {
		t.Errorf("Remaining = %d, want 0", r)
	}
}

func TestCompleteDiverged(t *testing.T) {
	t.Parallel()
	call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1_1", Name: "create_site", Arguments: `{}`}}}
	user := model.Message{Role: model.RoleUser, Content: "go"}
	approval := observation("call_1_1", `{"outcome":"DEFERRED","code":"APPROVAL_REQUIRED","wire":"agent_runtime.42221","message":"needs approval"}`)
	tests := []struct {
		name     string
		expect   Expect
		messages []model.Message
		wantErr  string
	}{
		{name: "code by name", expect: Expect{Code: "APPROVAL_REQUIRED"}, messages: []model.Message{user, call, approval}},
		{name: "code by wire form", expect: Expect{Code: "agent_runtime.42221", Outcome: "DEFERRED", Tool: "create_site", Contains: "needs approval"}, messages: []model.Message{user, call, approval}},
		{
			name:     "code differs",
			expect:   Expect{Code: "WRITE_COMMITTED"},
			messages: []model.Message{user, call, approval},
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") has code "APPROVAL_REQUIRED", script expects "WRITE_COMMITTED"`,
		},
		{
			name:     "outcome differs",
			expect:   Expect{Outcome: "SUCCESS"},
			messages: []model.Message{user, call, approval},
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") has outcome "DEFERRED", script expects "SUCCESS"`,
		},
		{
			name:     "tool differs",
			expect:   Expect{Tool: "query_site"},
			messages: []model.Message{user, call, approval},
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") answers tool "create_site", script expects "query_site"`,
		},
		{
			name:     "text missing",
			expect:   Expect{Contains: "下一步"},
			messages: []model.Message{user, call, approval},
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") does not contain "下一步": "{\"outcome\":\"DEFERRED\",\"code\":\"APPROVAL_REQUIRED\",\"wire\":\"agent_runtime.42221\",\"message\":\"needs approval\"}"`,
		},
		{
			name:     "not JSON",
			expect:   Expect{Code: "X"},
			messages: []model.Message{user, call, observation("call_1_1", "plain text")},
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") is not a JSON observation (invalid character 'p' looking for beginning of value): "plain text"`,
		},
		{
			name:     "no observation yet",
			expect:   Expect{Code: "X"},
			messages: []model.Message{user},
			wantErr:  "model/scripted: turn 1: conversation diverged from the script: expected an observation, the conversation has no tool message",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New([]Turn{{Expect: &tt.expect, Text: "next"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Complete(context.Background(), model.Request{Messages: tt.messages})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Fatalf("Complete error = %q, want %q", got, tt.wantErr)
			}
			wantRemaining := 0
			if tt.wantErr != "" {
				wantRemaining = 1
				if !errors.Is(err, ErrDiverged) {
					t.Errorf("errors.Is(err, ErrDiverged) = false")
				}
			}
			if r := m.Remaining(); r != wantRemaining {
				t.Errorf("Remaining = %d, want %d (a diverged turn is not consumed)", r, wantRemaining)
			}
		})
	}
}

func TestCompleteErrors(t *testing.T) {
	t.Parallel()
	user := []model.Message{{Role: model.RoleUser, Content: "hi"}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		req     model.Request
		wantErr string
		wantIs  error
	}{
		{name: "scripted failure", ctx: context.Background(), req: model.Request{Messages: user}, wantErr: "model/scripted: turn 1: scripted model failure: upstream 503", wantIs: ErrScriptedFailure},
		{name: "cancelled", ctx: cancelled, req: model.Request{Messages: user}, wantErr: "model/scripted: context canceled", wantIs: context.Canceled},
		{name: "invalid request", ctx: context.Background(), req: model.Request{}, wantErr: "model/scripted: model: invalid request: no messages", wantIs: model.ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New([]Turn{{Fail: "upstream 503"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Complete(tt.ctx, tt.req)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Complete error = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false", tt.wantIs)
			}
		})
	}
}

func TestConcurrentTurnsAreHandedOutOnce(t *testing.T) {
	t.Parallel()
	const n = 64
	turns := make([]Turn, n)
	for i := range turns {
		turns[i] = Turn{ToolCalls: []Call{{Name: "t"}}}
	}
	m, err := New(turns)
	if err != nil {
		t.Fatal(err)
	}
	req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	for range n {
		wg.Go(func() {
			resp, err := m.Complete(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[resp.Message.ToolCalls[0].ID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != n || !seen["call_1_1"] || !seen["call_64_1"] {
		t.Errorf("distinct ids = %d, want %d from call_1_1 to call_64_1", len(seen), n)
	}
	if _, err := m.Complete(context.Background(), req); !errors.Is(err, ErrExhausted) {
		t.Errorf("Complete after the script = %v, want ErrExhausted", err)
	}
}

// The loop's tool messages are plain text; outcome and code come from the
// host's observer.
func TestCompleteObserver(t *testing.T) {
	t.Parallel()
	call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1_1", Name: "create_site", Arguments: `{}`}}}
	user := model.Message{Role: model.RoleUser, Content: "go"}
	plain := observation("call_1_1", "该写操作须经用户确认。下一步：调用 builtin_node_approval")
	deferred := func(id string) (Observed, bool) {
		if id != "call_1_1" {
			return Observed{}, false
		}
		return Observed{Outcome: "DEFERRED", Code: "APPROVAL_REQUIRED", Wire: "agent_runtime.42221"}, true
	}
	tests := []struct {
		name     string
		expect   Expect
		observer Observer
		wantErr  string
	}{
		{name: "code by name", expect: Expect{Code: "APPROVAL_REQUIRED", Outcome: "DEFERRED"}, observer: deferred},
		{name: "code by wire form", expect: Expect{Code: "agent_runtime.42221", Tool: "create_site", Contains: "下一步："}, observer: deferred},
		{
			name:     "outcome differs",
			expect:   Expect{Outcome: "SUCCESS"},
			observer: deferred,
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") has outcome "DEFERRED", script expects "SUCCESS"`,
		},
		{
			name:     "code differs",
			expect:   Expect{Code: "WRITE_IN_FLIGHT"},
			observer: deferred,
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") has code "APPROVAL_REQUIRED", script expects "WRITE_IN_FLIGHT"`,
		},
		{
			name:     "observer knows nothing",
			expect:   Expect{Outcome: "DEFERRED"},
			observer: func(string) (Observed, bool) { return Observed{}, false },
			wantErr:  `model/scripted: turn 1: conversation diverged from the script: last observation (tool "create_site", call "call_1_1"): the host reports no observation for it`,
		},
		{name: "contains only needs no observer", expect: Expect{Contains: "须经用户确认"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New([]Turn{{Expect: &tt.expect, Text: "next"}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.observer != nil {
				m.SetObserver(tt.observer)
			}
			_, err = m.Complete(context.Background(), model.Request{Messages: []model.Message{user, call, plain}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Fatalf("Complete error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
