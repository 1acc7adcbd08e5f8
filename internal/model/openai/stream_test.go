package openai

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
)

// Event streams as servers other than OpenAI shape them.
func TestStreamShapes(t *testing.T) {
	t.Parallel()
	sse := func(events ...string) string { return "data: " + strings.Join(events, "\n\ndata: ") + "\n\n" }
	tests := []struct {
		name string
		body string
		want model.Response
	}{
		{
			name: "interleaved calls by index, name in pieces, comments, no space after data:",
			body: ": keep-alive\n\n" +
				`data:{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"list_","arguments":""}}]}}]}` + "\n\n" +
				sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"ping","arguments":"{\"x\":"}}]}}]}`,
					`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"articles","arguments":"{}"}}]}}]}`,
					`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
					`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
					`[DONE]`),
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "a", Name: "ping", Arguments: `{"x":1}`},
					{ID: "b", Name: "list_articles", Arguments: `{}`},
				}},
				FinishReason: model.FinishToolCalls,
				Usage:        model.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5},
			},
		},
		{
			name: "calls without index, each whole in one chunk, no [DONE]",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{\"k\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"2}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "a", Name: "x", Arguments: `{}`},
					{ID: "b", Name: "y", Arguments: `{"k":2}`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "a name streamed in equal pieces is concatenated",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"ab","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"ab","arguments":"{}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "abab", Arguments: `{}`}}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "the call's id and whole name repeated with every chunk",
			body: sse(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"ping","arguments":"{\"x\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"ping","arguments":"1}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, `[DONE]`),
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "ping", Arguments: `{"x":1}`}}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name: "a second choice is ignored, CRLF lines",
			body: strings.ReplaceAll(sse(`{"choices":[{"index":0,"delta":{"content":"yes"}},{"index":1,"delta":{"content":"no"}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`), "\n", "\r\n"),
			want: model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "yes"}, FinishReason: model.FinishStop},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeprovider.New(t, fakeprovider.Reply{Status: 200, ContentType: "text/event-stream", Body: tt.body})
			cfg := testConfig(srv.URL)
			cfg.Stream = true
			got, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Complete:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestStreamTooLarge(t *testing.T) {
	t.Parallel()
	srv := fakeprovider.New(t, fakeprovider.Reply{Content: strings.Repeat("long text ", 400)})
	cfg := testConfig(srv.URL)
	cfg.Stream, cfg.MaxResponseBytes = true, 2048
	_, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
	const want = "model/openai: model: malformed provider response: HTTP 200 OK: the event stream exceeds 2048 bytes"
	if err == nil || err.Error() != want {
		t.Fatalf("Complete error = %v, want %s", err, want)
	}
}
