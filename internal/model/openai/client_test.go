package openai

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/internal/model"
)

var userOnly = model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}

func TestCompleteParsesReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want model.Response
	}{
		{
			name: "content only",
			body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "Hello there."},
				FinishReason: model.FinishStop,
				Usage:        model.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15},
			},
		},
		{
			name: "parallel tool calls with null content",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_a","type":"function","function":{"name":"query_site","arguments":"{\"space\":\"s1\"}"}},` +
				`{"id":"call_b","type":"function","function":{"name":"list_articles","arguments":"{\"site\":\"w1\",\"limit\":5}"}}` +
				`]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60}}`,
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_a", Name: "query_site", Arguments: `{"space":"s1"}`},
					{ID: "call_b", Name: "list_articles", Arguments: `{"site":"w1","limit":5}`},
				}},
				FinishReason: model.FinishToolCalls,
				Usage:        model.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60},
			},
		},
		{
			name: "invalid JSON argument text kept verbatim",
			body: `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[` +
				`{"id":"call_x","type":"function","function":{"name":"create_site","arguments":"{\"name\": \"中文\\u00e9\",  \"tags\": [1,"}}` +
				`]},"finish_reason":"tool_calls"}]}`,
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_x", Name: "create_site", Arguments: `{"name": "中文\u00e9",  "tags": [1,`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "text beside a tool call, empty and null arguments",
			body: `{"choices":[{"message":{"role":"assistant","content":"Checking.","tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"ping","arguments":""}},` +
				`{"id":"c2","type":"function","function":{"name":"pong","arguments":null}}` +
				`]},"finish_reason":"tool_calls"}]}`,
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, Content: "Checking.", ToolCalls: []model.ToolCall{
					{ID: "c1", Name: "ping"},
					{ID: "c2", Name: "pong"},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "non-standard server: object arguments, no ids, no type",
			body: `{"choices":[{"message":{"role":"assistant","tool_calls":[` +
				`{"function":{"name":"a","arguments":{"k": 1}}},` +
				`{"function":{"name":"b","arguments":"{}"}}` +
				`]},"finish_reason":"tool_calls"}]}`,
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_0", Name: "a", Arguments: `{"k": 1}`},
					{ID: "call_1", Name: "b", Arguments: `{}`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "content as text parts",
			body: `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},"finish_reason":"length"}]}`,
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "ab"},
				FinishReason: model.FinishLength,
			},
		},
		{
			name: "refusal",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant},
				FinishReason: model.FinishStop,
				Refusal:      "I can't help with that.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, reply{status: http.StatusOK, body: tt.body})
			got, err := newTestClient(t, testConfig(srv.URL)).Complete(context.Background(), userOnly)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Complete:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestCompleteBadResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reply   reply
		wantErr string
	}{
		{
			name:    "malformed JSON body",
			reply:   reply{status: http.StatusOK, body: `{"choices":[{"message":`},
			wantErr: `model/openai: model: malformed provider response: HTTP 200 OK: the body is not a chat completion (unexpected end of JSON input): application/json, 23 bytes: {"choices":[{"message":`,
		},
		{
			name:    "not JSON at all",
			reply:   reply{status: http.StatusOK, body: `<html>gateway</html>`},
			wantErr: "model/openai: model: malformed provider response: HTTP 200 OK: the body is not a chat completion (invalid character '<' looking for beginning of value): application/json, 20 bytes: gateway",
		},
		{
			name:    "no choices",
			reply:   reply{status: http.StatusOK, body: `{"choices":[]}`},
			wantErr: "model/openai: model: malformed provider response: HTTP 200 OK: the reply has no choices",
		},
		{
			name:    "error object with status 200",
			reply:   reply{status: http.StatusOK, body: `{"error":{"message":"unsupported parameter","type":"invalid_request_error"}}`},
			wantErr: `model/openai: model: malformed provider response: unsupported parameter`,
		},
		{
			name:    "unknown tool call type",
			reply:   reply{status: http.StatusOK, body: `{"choices":[{"message":{"tool_calls":[{"id":"c","type":"custom","function":{"name":"x"}}]}}]}`},
			wantErr: `model/openai: model: malformed provider response: HTTP 200 OK: tool call 0 has type "custom"`,
		},
		{
			name:    "tool call without a function name",
			reply:   reply{status: http.StatusOK, body: `{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}}]}`},
			wantErr: `model/openai: model: malformed provider response: HTTP 200 OK: tool call 0 has no function name`,
		},
		{
			name:    "content of the wrong type",
			reply:   reply{status: http.StatusOK, body: `{"choices":[{"message":{"content":42}}]}`},
			wantErr: "model/openai: model: malformed provider response: HTTP 200 OK: message content is neither text nor parts",
		},
		{
			name:    "body over the limit",
			reply:   reply{status: http.StatusOK, body: `{"choices":[{"message":{"content":"` + string(make([]byte, 2048)) + `"}}]}`},
			wantErr: "model/openai: model: malformed provider response: HTTP 200 OK: the body exceeds 1024 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, tt.reply)
			cfg := testConfig(srv.URL)
			cfg.MaxResponseBytes = 1024
			_, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Complete error = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, model.ErrMalformed) {
				t.Errorf("errors.Is(err, model.ErrMalformed) = false for %v", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("requests = %d, want 1 (a malformed reply is not retried)", n)
			}
		})
	}
}

func TestCompleteInvalidRequest(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, reply{status: http.StatusOK, body: `{}`})
	_, err := newTestClient(t, testConfig(srv.URL)).Complete(context.Background(), model.Request{})
	const want = "model/openai: model: invalid request: no messages"
	if err == nil || err.Error() != want {
		t.Fatalf("Complete error = %v, want %q", err, want)
	}
	if !errors.Is(err, model.ErrInvalidRequest) {
		t.Errorf("errors.Is(err, model.ErrInvalidRequest) = false")
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}
