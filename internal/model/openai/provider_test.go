package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
)

// modes runs a test without and with streaming.
var modes = []struct {
	name   string
	stream bool
}{{"json", false}, {"stream", true}}

func TestCompleteStreamMatchesJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply fakeprovider.Reply
		want  model.Response
	}{
		{
			name:  "text with usage and cached tokens",
			reply: fakeprovider.Reply{Content: "Hello there, 世界!", Usage: &fakeprovider.Usage{Prompt: 1200, Completion: 7, Cached: 1024}},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "Hello there, 世界!"},
				FinishReason: model.FinishStop,
				Usage:        model.Usage{PromptTokens: 1200, CompletionTokens: 7, TotalTokens: 1207, CachedTokens: 1024},
			},
		},
		{
			name: "parallel tool calls",
			reply: fakeprovider.Reply{Calls: []fakeprovider.Call{
				{ID: "call_a", Name: "query_site", Arguments: `{"space":"s1"}`},
				{ID: "call_b", Name: "list_articles", Arguments: `{"site":"w1","limit":5}`},
				{ID: "call_c", Name: "ping", Arguments: `{}`},
			}, Usage: &fakeprovider.Usage{Prompt: 40, Completion: 20}},
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_a", Name: "query_site", Arguments: `{"space":"s1"}`},
					{ID: "call_b", Name: "list_articles", Arguments: `{"site":"w1","limit":5}`},
					{ID: "call_c", Name: "ping", Arguments: `{}`},
				}},
				FinishReason: model.FinishToolCalls,
				Usage:        model.Usage{PromptTokens: 40, CompletionTokens: 20, TotalTokens: 60},
			},
		},
		{
			name:  "text beside a call with invalid argument JSON, kept verbatim",
			reply: fakeprovider.Reply{Content: "Checking.", Calls: []fakeprovider.Call{{ID: "c1", Name: "create_site", Arguments: `{"name": "中文",  "tags": [1,`}}},
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, Content: "Checking.", ToolCalls: []model.ToolCall{
					{ID: "c1", Name: "create_site", Arguments: `{"name": "中文",  "tags": [1,`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
		{
			name:  "refusal",
			reply: fakeprovider.Reply{Refusal: "I'm sorry, I can't help with that request."},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant},
				FinishReason: model.FinishStop,
				Refusal:      "I'm sorry, I can't help with that request.",
			},
		},
		{
			name:  "cut at the token limit inside a tool call",
			reply: fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c1", Name: "write", Arguments: `{"text":"lorem ip`}}, Finish: "length"},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "write", Arguments: `{"text":"lorem ip`}}},
				FinishReason: model.FinishLength,
			},
		},
		{
			name:  "content filter",
			reply: fakeprovider.Reply{Content: "Here is", Finish: "content_filter"},
			want: model.Response{
				Message:      model.Message{Role: model.RoleAssistant, Content: "Here is"},
				FinishReason: model.FinishContentFilter,
			},
		},
		{
			name:  "a server without call ids",
			reply: fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "a", Arguments: `{"k":1}`}, {Name: "b", Arguments: `{}`}}},
			want: model.Response{
				Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "call_0", Name: "a", Arguments: `{"k":1}`},
					{ID: "call_1", Name: "b", Arguments: `{}`},
				}},
				FinishReason: model.FinishToolCalls,
			},
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				srv := fakeprovider.New(t, tt.reply)
				cfg := testConfig(srv.URL)
				cfg.Stream = m.stream
				got, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Complete:\n got %#v\nwant %#v", got, tt.want)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream != m.stream {
					t.Errorf("requests = %+v, want one with stream %t", reqs, m.stream)
				}
			})
		}
	}
}

func TestCompleteProviderFailures(t *testing.T) {
	t.Parallel()
	const key = "sk-test-SECRET-0123456789"
	ok := fakeprovider.Text("ok")
	tests := []struct {
		name string
		// streamOnly replies exist only as a stream.
		streamOnly   bool
		replies      []fakeprovider.Reply
		configure    func(*Config)
		wantErr      string
		wantKind     error
		wantStatus   int
		wantCode     string
		wantRetry    time.Duration
		wantRequests int
	}{
		{
			name:         "429 with Retry-After waited for, then success",
			replies:      []fakeprovider.Reply{fakeprovider.RateLimited(30 * time.Millisecond), ok},
			wantRequests: 2,
		},
		{
			name:         "429 until the retries run out",
			replies:      []fakeprovider.Reply{fakeprovider.RateLimited(20 * time.Millisecond)},
			wantErr:      "model/openai: giving up: model: provider rate limited: HTTP 429 (rate_limit_exceeded): Rate limit reached for requests. Please try again in 20ms. (after 3 attempts)",
			wantKind:     model.ErrRateLimited,
			wantStatus:   429,
			wantCode:     "rate_limit_exceeded",
			wantRetry:    20 * time.Millisecond,
			wantRequests: 3,
		},
		{
			name:         "quota exhausted is not retried",
			replies:      []fakeprovider.Reply{fakeprovider.InsufficientQuota(), ok},
			wantErr:      "model/openai: model: provider quota exhausted: HTTP 429 (insufficient_quota): You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
			wantKind:     model.ErrQuota,
			wantStatus:   429,
			wantCode:     "insufficient_quota",
			wantRequests: 1,
		},
		{
			name:         "a CDN's 502 page: retried, then its title, type and size, not the page",
			replies:      []fakeprovider.Reply{fakeprovider.BadGatewayPage()},
			wantErr:      "model/openai: giving up: model: provider unavailable: HTTP 502 Bad Gateway: text/html, 1059 bytes: api.example.com | 502: Bad gateway (after 3 attempts)",
			wantKind:     model.ErrUnavailable,
			wantStatus:   502,
			wantRequests: 3,
		},
		{
			name:         "an error object at the top level (Mistral-style)",
			replies:      []fakeprovider.Reply{fakeprovider.MessageOrder(), ok},
			wantErr:      "model/openai: model: provider rejected the request: HTTP 400 (3230): Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
			wantKind:     model.ErrBadRequest,
			wantStatus:   400,
			wantCode:     "3230",
			wantRequests: 1,
		},
		{
			name:         "503 retried, then success",
			replies:      []fakeprovider.Reply{fakeprovider.Unavailable(), ok},
			wantRequests: 2,
		},
		{
			name:         "5xx until the retries run out",
			replies:      []fakeprovider.Reply{fakeprovider.Unavailable()},
			wantErr:      "model/openai: giving up: model: provider unavailable: HTTP 503 Service Unavailable: The server is overloaded or not ready yet. (after 3 attempts)",
			wantKind:     model.ErrUnavailable,
			wantStatus:   503,
			wantRequests: 3,
		},
		{
			name:         "context length is not retried",
			replies:      []fakeprovider.Reply{fakeprovider.ContextLength(), ok},
			wantErr:      "model/openai: model: context length exceeded: HTTP 400 (context_length_exceeded): This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
			wantKind:     model.ErrContextLength,
			wantStatus:   400,
			wantCode:     "context_length_exceeded",
			wantRequests: 1,
		},
		{
			name:         "401: not retried, the key's end redacted",
			replies:      []fakeprovider.Reply{fakeprovider.Unauthorized(key), ok},
			configure:    func(c *Config) { c.APIKey = "sk-...6789" }, // the text OpenAI quotes
			wantErr:      "model/openai: model: provider authentication failed: HTTP 401 (invalid_api_key): Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
			wantKind:     model.ErrAuth,
			wantStatus:   401,
			wantCode:     "invalid_api_key",
			wantRequests: 1,
		},
		{
			name:         "garbage body",
			replies:      []fakeprovider.Reply{fakeprovider.Garbage(), ok},
			wantErr:      "model/openai: model: malformed provider response: HTTP 200 OK: the body is not a chat completion (invalid character '<' looking for beginning of value): text/html, 41 bytes: 502 Bad Gateway",
			wantKind:     model.ErrMalformed,
			wantStatus:   200,
			wantRequests: 1,
		},
		{
			name:         "malformed JSON",
			replies:      []fakeprovider.Reply{{Status: 200, Body: `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"`}, ok},
			wantErr:      `model/openai: model: malformed provider response: HTTP 200 OK: the body is not a chat completion (unexpected end of JSON input): application/json, 76 bytes: {"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"`,
			wantKind:     model.ErrMalformed,
			wantStatus:   200,
			wantRequests: 1,
		},
		{
			name:         "no choices",
			replies:      []fakeprovider.Reply{{Status: 200, Body: `{"id":"x","object":"chat.completion","choices":[]}`}, ok},
			wantErr:      "model/openai: model: malformed provider response: HTTP 200 OK: the reply has no choices",
			wantKind:     model.ErrMalformed,
			wantStatus:   200,
			wantRequests: 1,
		},
		{
			name:         "bad tool call frame",
			replies:      []fakeprovider.Reply{{Calls: []fakeprovider.Call{{ID: "c1", Arguments: `{}`}}}, ok},
			wantErr:      "model/openai: model: malformed provider response: HTTP 200 OK: tool call 0 has no function name",
			wantKind:     model.ErrMalformed,
			wantStatus:   200,
			wantRequests: 1,
		},
		{
			name:         "stream cut before its end is retried",
			streamOnly:   true,
			replies:      []fakeprovider.Reply{{Content: "a long answer", CutAfter: 2}, ok},
			wantRequests: 2,
		},
		{
			name:         "stream cut every time",
			streamOnly:   true,
			replies:      []fakeprovider.Reply{{Content: "a long answer", CutAfter: 2}},
			configure:    func(c *Config) { c.MaxRetries = 1 },
			wantErr:      "model/openai: giving up: model: provider unavailable: HTTP 200 OK: the event stream ended before the reply did (after 2 attempts)",
			wantKind:     model.ErrUnavailable,
			wantStatus:   200,
			wantRequests: 2,
		},
		{
			name:         "error event inside the stream",
			streamOnly:   true,
			replies:      []fakeprovider.Reply{{Status: 200, ContentType: "text/event-stream", Body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"prompt too long for the context window\",\"type\":\"invalid_request_error\"}}\n\n"}},
			wantErr:      "model/openai: model: context length exceeded: prompt too long for the context window",
			wantKind:     model.ErrContextLength,
			wantRequests: 1,
		},
		{
			name:         "broken event inside the stream",
			streamOnly:   true,
			replies:      []fakeprovider.Reply{{Status: 200, ContentType: "text/event-stream", Body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\n\n"}},
			wantErr:      `model/openai: model: malformed provider response: HTTP 200 OK: an event is not a chat completion chunk (unexpected end of JSON input): {"choices":[{`,
			wantKind:     model.ErrMalformed,
			wantStatus:   200,
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			if tt.streamOnly && !m.stream {
				continue
			}
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				srv := fakeprovider.New(t, tt.replies...)
				cfg := testConfig(srv.URL)
				cfg.APIKey = key
				cfg.Stream = m.stream
				if tt.configure != nil {
					tt.configure(&cfg)
				}
				got, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
				if n := len(srv.Requests()); n != tt.wantRequests {
					t.Errorf("requests = %d, want %d", n, tt.wantRequests)
				}
				if tt.wantErr == "" {
					if err != nil {
						t.Fatalf("Complete: %v", err)
					}
					if got.Message.Content != "ok" {
						t.Errorf("content = %q, want ok", got.Message.Content)
					}
					return
				}
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Complete error:\n got %v\nwant %s", err, tt.wantErr)
				}
				if !errors.Is(err, tt.wantKind) {
					t.Errorf("errors.Is(err, %v) = false", tt.wantKind)
				}
				if name := model.KindName(err); name == "" {
					t.Errorf("KindName(err) is empty")
				}
				var pe *model.ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("errors.As(err, *model.ProviderError) = false")
				}
				if pe.Status != tt.wantStatus || pe.Code != tt.wantCode || pe.RetryAfter != tt.wantRetry || pe.Attempts != tt.wantRequests {
					t.Errorf("ProviderError status %d code %q retry-after %s attempts %d; want %d %q %s %d",
						pe.Status, pe.Code, pe.RetryAfter, pe.Attempts, tt.wantStatus, tt.wantCode, tt.wantRetry, tt.wantRequests)
				}
			})
		}
	}
}

func TestCompleteStrictArgumentsMappedBack(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"site":{"type":"string"},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["site"]}`)
	req := model.Request{
		Messages: userOnly.Messages,
		Tools:    []model.Tool{{Name: "list_articles", Parameters: schema}, {Name: "other", Parameters: schema}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeprovider.New(t, fakeprovider.Reply{Calls: []fakeprovider.Call{
				{ID: "c1", Name: "list_articles", Arguments: `{"site":"w1","limit":null,"tags":null}`},
				{ID: "c2", Name: "list_articles", Arguments: `{"site":"w1","limit":5,"tags":["a"]}`},
				{ID: "c3", Name: "unknown_tool", Arguments: `{"site":null}`},
			}})
			cfg := testConfig(srv.URL)
			cfg.Stream, cfg.Strict = m.stream, true
			got, err := newTestClient(t, cfg).Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := []model.ToolCall{
				{ID: "c1", Name: "list_articles", Arguments: `{"site":"w1"}`},
				{ID: "c2", Name: "list_articles", Arguments: `{"site":"w1","limit":5,"tags":["a"]}`},
				{ID: "c3", Name: "unknown_tool", Arguments: `{"site":null}`},
			}
			if !reflect.DeepEqual(got.Message.ToolCalls, want) {
				t.Errorf("tool calls:\n got %+v\nwant %+v", got.Message.ToolCalls, want)
			}
			var body struct {
				Tools []struct {
					Function struct {
						Parameters json.RawMessage `json:"parameters"`
						Strict     bool            `json:"strict"`
					} `json:"function"`
				} `json:"tools"`
			}
			if err := json.Unmarshal([]byte(srv.Requests()[0].Body), &body); err != nil {
				t.Fatal(err)
			}
			const sent = `{"type":"object","properties":{"site":{"type":"string"},"limit":{"type":["integer","null"]},"tags":{"type":["array","null"],"items":{"type":"string"}}},"required":["site","limit","tags"],"additionalProperties":false}`
			for i, tool := range body.Tools {
				if !tool.Function.Strict || string(tool.Function.Parameters) != sent {
					t.Errorf("tool %d sent strict %t with %s, want strict with %s", i, tool.Function.Strict, tool.Function.Parameters, sent)
				}
			}
		})
	}
}

func TestStreamAnsweredAsJSON(t *testing.T) {
	t.Parallel()
	// A server that ignores "stream" answers with a plain completion.
	srv := fakeprovider.New(t, fakeprovider.Reply{Status: http.StatusOK, Body: fakeprovider.JSON(fakeprovider.Text("plain"))})
	cfg := testConfig(srv.URL)
	cfg.Stream = true
	got, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "plain"}, FinishReason: model.FinishStop,
		Usage: model.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete:\n got %#v\nwant %#v", got, want)
	}
}

// A provider that refuses a converted schema gets the tool non-strict,
// at once and on every later turn, and the fallback says why.
func TestStrictRefusedByProvider(t *testing.T) {
	t.Parallel()
	const msg = "Invalid schema for function 'b': In context=('properties', 'x'), 'minLength' is not permitted."
	tests := []struct {
		name  string
		param string
	}{{"named by param", "tools[1].function.parameters"}, {"named in the message only", ""}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refusal := fakeprovider.Error(http.StatusBadRequest, msg, "invalid_request_error", "invalid_function_parameters")
			if tt.param != "" {
				refusal.Body = strings.Replace(refusal.Body, `"param":null`, `"param":"`+tt.param+`"`, 1)
			}
			srv := fakeprovider.New(t, refusal, fakeprovider.Text("ok"))
			cfg := testConfig(srv.URL)
			cfg.Strict, cfg.MaxRetries = true, 0 // a resend is not a retry
			c := newTestClient(t, cfg)
			schema := json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","minLength":2}},"required":["x"]}`)
			req := model.Request{Messages: userOnly.Messages, Tools: []model.Tool{{Name: "a", Parameters: schema}, {Name: "b", Parameters: schema}}}
			want := []model.StrictFallback{{Tool: "b", Reason: "the provider refused its strict schema: " + msg}}
			for turn := range 2 {
				got, err := c.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("turn %d: %v", turn, err)
				}
				if !reflect.DeepEqual(got.StrictFallbacks, want) {
					t.Errorf("turn %d: StrictFallbacks = %+v, want %+v", turn, got.StrictFallbacks, want)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("requests = %d, want 3 (refused, resent, next turn)", len(reqs))
			}
			for i, r := range reqs {
				var body struct {
					Tools []struct {
						Function struct {
							Strict bool `json:"strict"`
						} `json:"function"`
					} `json:"tools"`
				}
				if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
					t.Fatal(err)
				}
				got := []bool{body.Tools[0].Function.Strict, body.Tools[1].Function.Strict}
				if wantStrict := []bool{true, i == 0}; !reflect.DeepEqual(got, wantStrict) {
					t.Errorf("request %d: strict = %v, want %v", i, got, wantStrict)
				}
			}
		})
	}
}
