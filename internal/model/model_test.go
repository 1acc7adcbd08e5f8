package model_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentwarden/warden/internal/model"
)

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	sys := model.Message{Role: model.RoleSystem, Content: "s"}
	user := model.Message{Role: model.RoleUser, Content: "u"}
	calls := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "x"}, {ID: "b", Name: "y"}}}
	toolA := model.Message{Role: model.RoleTool, ToolCallID: "a", Content: "{}"}
	toolB := model.Message{Role: model.RoleTool, ToolCallID: "b", Content: "{}"}
	tool := model.Tool{Name: "x", Parameters: json.RawMessage(`{"type":"object"}`)}
	zero := 0
	tests := []struct {
		name    string
		req     model.Request
		wantErr string
	}{
		{name: "full round", req: model.Request{Messages: []model.Message{sys, user, calls, toolA, toolB, {Role: model.RoleAssistant, Content: "done"}, user}, Tools: []model.Tool{tool, {Name: "y"}}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceFunction, Name: "y"}}},
		{name: "answers in any order, then a user turn", req: model.Request{Messages: []model.Message{user, calls, toolB, toolA, user}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired}}},
		{name: "no messages", req: model.Request{}, wantErr: "model: invalid request: no messages"},
		{name: "unknown role", req: model.Request{Messages: []model.Message{{Role: "developer"}}}, wantErr: `model: invalid request: message 0: unknown role "developer"`},
		{name: "user with tool calls", req: model.Request{Messages: []model.Message{{Role: model.RoleUser, ToolCalls: calls.ToolCalls}}}, wantErr: "model: invalid request: message 0: a user message carries tool calls or a tool call id"},
		{name: "assistant with call id", req: model.Request{Messages: []model.Message{{Role: model.RoleAssistant, ToolCallID: "a"}}}, wantErr: "model: invalid request: message 0: an assistant message carries a tool call id"},
		{name: "tool without id", req: model.Request{Messages: []model.Message{user, calls, {Role: model.RoleTool}}}, wantErr: "model: invalid request: message 2: tool message without a tool call id"},
		{name: "tool answers nothing", req: model.Request{Messages: []model.Message{user, toolA}}, wantErr: `model: invalid request: message 1: tool message answers "a", which is not an unanswered call of the assistant message before it`},
		{name: "answered twice", req: model.Request{Messages: []model.Message{user, calls, toolA, toolA}}, wantErr: `model: invalid request: message 3: tool message answers "a", which is not an unanswered call of the assistant message before it`},
		{name: "call left unanswered before a user turn", req: model.Request{Messages: []model.Message{user, calls, toolA, user}}, wantErr: `model: invalid request: message 3: tool call "b" is not answered by a tool message`},
		{name: "call left unanswered at the end", req: model.Request{Messages: []model.Message{user, calls, toolB}}, wantErr: `model: invalid request: message 3: tool call "a" is not answered by a tool message`},
		{name: "call without id", req: model.Request{Messages: []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Name: "x"}}}}}, wantErr: "model: invalid request: message 0: tool call 0 without an id"},
		{name: "duplicate call id", req: model.Request{Messages: []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a"}, {ID: "a"}}}}}, wantErr: `model: invalid request: message 0: duplicate tool call id "a"`},
		{name: "tool without name", req: model.Request{Messages: []model.Message{user}, Tools: []model.Tool{{}}}, wantErr: "model: invalid request: tool 0 without a name"},
		{name: "duplicate tool", req: model.Request{Messages: []model.Message{user}, Tools: []model.Tool{tool, tool}}, wantErr: `model: invalid request: duplicate tool "x"`},
		{name: "schema not JSON", req: model.Request{Messages: []model.Message{user}, Tools: []model.Tool{{Name: "x", Parameters: json.RawMessage(`{`)}}}, wantErr: `model: invalid request: tool "x": parameters are not valid JSON`},
		{name: "choice of an unknown tool", req: model.Request{Messages: []model.Message{user}, Tools: []model.Tool{tool}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceFunction, Name: "z"}}, wantErr: `model: invalid request: tool choice names "z", which is not an offered tool`},
		{name: "mode with a name", req: model.Request{Messages: []model.Message{user}, ToolChoice: model.ToolChoice{Mode: model.ToolChoiceAuto, Name: "x"}}, wantErr: `model: invalid request: tool choice "auto" names a tool`},
		{name: "unknown mode", req: model.Request{Messages: []model.Message{user}, ToolChoice: model.ToolChoice{Mode: "any"}}, wantErr: `model: invalid request: unknown tool choice mode "any"`},
		{name: "zero max tokens", req: model.Request{Messages: []model.Message{user}, MaxTokens: &zero}, wantErr: "model: invalid request: max tokens 0 is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.req.Validate()
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, model.ErrInvalidRequest) {
					t.Errorf("errors.Is(err, ErrInvalidRequest) = false")
				}
			}
			if got != tt.wantErr {
				t.Errorf("Validate = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
