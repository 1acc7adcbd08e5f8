package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/internal/model"
)

const okBody = `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("golden is not JSON: %v", err)
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

const (
	strictSchema = `{"type":"object","properties":{"space":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["space","limit"],"additionalProperties":false}`
	looseSchema  = `{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"}},"required":["name"],"additionalProperties":false}`
	// looseStrict is looseSchema converted: title required and nullable.
	looseStrict = `{"type":"object","properties":{"name":{"type":"string"},"title":{"type":["string","null"]}},"required":["name","title"],"additionalProperties":false}`
	oneOfSchema = `{"type":"object","properties":{"q":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`
	emptyStrict = `{"type":"object","properties":{},"required":[],"additionalProperties":false}`
)

func TestRequestBody(t *testing.T) {
	t.Parallel()
	conversation := []model.Message{
		{Role: model.RoleSystem, Content: "You build websites."},
		{Role: model.RoleUser, Content: "Create a site in space s1."},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "query_site", Arguments: `{"space":"s1","limit":null}`},
			{ID: "call_2", Name: "create_site", Arguments: `{"name": oops`},
		}},
		{Role: model.RoleTool, ToolCallID: "call_1", Content: `{"outcome":"SUCCESS","text":"0 sites"}`},
		{Role: model.RoleTool, ToolCallID: "call_2", Content: `{"outcome":"REJECTED","code":"ARGS_INVALID_JSON"}`},
		{Role: model.RoleAssistant, Content: "Retrying.", ToolCalls: []model.ToolCall{{ID: "call_3", Name: "create_site", Arguments: `{}`}}},
		{Role: model.RoleTool, ToolCallID: "call_3", Content: ""},
	}
	tools := func(strict bool) []model.Tool {
		return []model.Tool{
			{Name: "query_site", Description: "Find sites in a space.", Parameters: json.RawMessage(strictSchema), Strict: strict},
			{Name: "create_site", Description: "Create a site.", Parameters: json.RawMessage(looseSchema), Strict: strict},
			{Name: "finish", Strict: strict},
			{Name: "search", Parameters: json.RawMessage(oneOfSchema), Strict: strict},
		}
	}
	tests := []struct {
		name          string
		maxCompletion bool
		req           model.Request
		configure     func(*Config)
		golden        string
		accept        string
		wantFallbacks []model.StrictFallback
	}{
		{
			name: "strict requested: sent where the schema allows, fallback elsewhere",
			req: model.Request{
				Messages:          conversation,
				Tools:             tools(true),
				ToolChoice:        model.ToolChoice{Mode: model.ToolChoiceFunction, Name: "create_site"},
				Temperature:       ptr(0.0),
				MaxTokens:         ptr(512),
				ParallelToolCalls: ptr(false),
			},
			golden: `{
  "model": "gpt-test",
  "messages": [
    {"role": "system", "content": "You build websites."},
    {"role": "user", "content": "Create a site in space s1."},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "query_site", "arguments": "{\"space\":\"s1\",\"limit\":null}"}},
      {"id": "call_2", "type": "function", "function": {"name": "create_site", "arguments": "{\"name\": oops"}}
    ]},
    {"role": "tool", "content": "{\"outcome\":\"SUCCESS\",\"text\":\"0 sites\"}", "tool_call_id": "call_1"},
    {"role": "tool", "content": "{\"outcome\":\"REJECTED\",\"code\":\"ARGS_INVALID_JSON\"}", "tool_call_id": "call_2"},
    {"role": "assistant", "content": "Retrying.", "tool_calls": [
      {"id": "call_3", "type": "function", "function": {"name": "create_site", "arguments": "{}"}}
    ]},
    {"role": "tool", "content": "", "tool_call_id": "call_3"}
  ],
  "tools": [
    {"type": "function", "function": {"name": "query_site", "description": "Find sites in a space.", "parameters": ` + strictSchema + `, "strict": true}},
    {"type": "function", "function": {"name": "create_site", "description": "Create a site.", "parameters": ` + looseStrict + `, "strict": true}},
    {"type": "function", "function": {"name": "finish", "parameters": ` + emptyStrict + `, "strict": true}},
    {"type": "function", "function": {"name": "search", "parameters": ` + oneOfSchema + `}}
  ],
  "tool_choice": {"function": {"name": "create_site"}, "type": "function"},
  "parallel_tool_calls": false,
  "temperature": 0,
  "max_tokens": 512
}`,
			wantFallbacks: []model.StrictFallback{
				{Tool: "search", Reason: `$.properties.q: "oneOf" is not supported in strict mode`},
			},
		},
		{
			name: "config: strict for every tool, streaming, tool choice and parallel calls by default",
			configure: func(c *Config) {
				c.Strict, c.Stream, c.ToolChoice, c.ParallelToolCalls = true, true, model.ToolChoiceAuto, ptr(false)
			},
			req: model.Request{Messages: conversation[:2], Tools: tools(false)[1:3]},
			golden: `{
  "model": "gpt-test",
  "messages": [
    {"role": "system", "content": "You build websites."},
    {"role": "user", "content": "Create a site in space s1."}
  ],
  "tools": [
    {"type": "function", "function": {"name": "create_site", "description": "Create a site.", "parameters": ` + looseStrict + `, "strict": true}},
    {"type": "function", "function": {"name": "finish", "parameters": ` + emptyStrict + `, "strict": true}}
  ],
  "tool_choice": "auto",
  "parallel_tool_calls": false,
  "stream": true,
  "stream_options": {"include_usage": true}
}`,
			accept: "text/event-stream",
		},
		{
			name: "config defaults do not override the request's, and need tools",
			configure: func(c *Config) {
				c.ToolChoice, c.ParallelToolCalls = model.ToolChoiceRequired, ptr(true)
			},
			req:    model.Request{Messages: conversation[:2], ToolChoice: model.ToolChoice{Mode: model.ToolChoiceNone}},
			golden: `{"model": "gpt-test", "messages": [{"role": "system", "content": "You build websites."}, {"role": "user", "content": "Create a site in space s1."}], "tool_choice": "none"}`,
		},
		{
			name:          "strict off, provider defaults, max_completion_tokens",
			maxCompletion: true,
			req: model.Request{
				Messages:   conversation[:2],
				Tools:      tools(false)[:2],
				ToolChoice: model.ToolChoice{Mode: model.ToolChoiceRequired},
				MaxTokens:  ptr(64),
			},
			golden: `{
  "model": "gpt-test",
  "messages": [
    {"role": "system", "content": "You build websites."},
    {"role": "user", "content": "Create a site in space s1."}
  ],
  "tools": [
    {"type": "function", "function": {"name": "query_site", "description": "Find sites in a space.", "parameters": ` + strictSchema + `}},
    {"type": "function", "function": {"name": "create_site", "description": "Create a site.", "parameters": ` + looseSchema + `}}
  ],
  "tool_choice": "required",
  "max_completion_tokens": 64
}`,
		},
		{
			name:   "no tools, no options",
			req:    model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: ""}}},
			golden: `{"model": "gpt-test", "messages": [{"role": "user", "content": ""}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, reply{status: http.StatusOK, body: okBody})
			cfg := testConfig(srv.URL)
			cfg.MaxCompletionTokens = tt.maxCompletion
			if tt.configure != nil {
				tt.configure(&cfg)
			}
			got, err := newTestClient(t, cfg).Complete(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if !reflect.DeepEqual(got.StrictFallbacks, tt.wantFallbacks) {
				t.Errorf("StrictFallbacks = %#v, want %#v", got.StrictFallbacks, tt.wantFallbacks)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if want := compact(t, tt.golden); r.body != want {
				t.Errorf("body:\n got %s\nwant %s", r.body, want)
			}
			if r.method != http.MethodPost || r.path != "/v1/chat/completions" {
				t.Errorf("request = %s %s, want POST /v1/chat/completions", r.method, r.path)
			}
			for k, want := range map[string]string{
				"Authorization": "Bearer sk-test-SECRET-0123456789",
				"Content-Type":  "application/json",
				"Accept":        cmp.Or(tt.accept, "application/json"),
			} {
				if got := r.header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestNoAuthorizationWithoutKey(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, reply{status: http.StatusOK, body: okBody})
	cfg := testConfig(srv.URL)
	cfg.BaseURL += "/"
	cfg.APIKey = ""
	if _, err := newTestClient(t, cfg).Complete(context.Background(), userOnly); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := srv.requests()[0]
	if _, ok := r.header["Authorization"]; ok {
		t.Errorf("Authorization sent without an API key: %q", r.header.Get("Authorization"))
	}
	if r.path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions (trailing slash of the base URL trimmed)", r.path)
	}
}

func TestCheckStrictSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		schema  string
		wantErr string
	}{
		{name: "flat, closed, all required", schema: strictSchema},
		{name: "no properties", schema: `{"type":"object","properties":{},"required":[],"additionalProperties":false}`},
		{
			name:   "nested objects, arrays, anyOf and defs",
			schema: `{"type":"object","additionalProperties":false,"required":["lines","ref"],"properties":{"lines":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["goodsCode"],"properties":{"goodsCode":{"type":"string"}}}},"ref":{"anyOf":[{"$ref":"#/$defs/addr"},{"type":"null"}]}},"$defs":{"addr":{"type":"object","additionalProperties":false,"required":["city"],"properties":{"city":{"type":"string"}}}}}`,
		},
		{name: "empty", schema: ``, wantErr: "no parameter schema"},
		{name: "not JSON", schema: `{"type":`, wantErr: "parameter schema is not JSON: unexpected EOF"},
		{name: "root not an object", schema: `{"type":"array","items":{"type":"string"}}`, wantErr: "$: the root must be an object schema"},
		{name: "root anyOf", schema: `{"type":"object","anyOf":[]}`, wantErr: "$: anyOf is not allowed at the root"},
		{name: "additionalProperties missing", schema: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, wantErr: "$: additionalProperties must be false"},
		{name: "additionalProperties true", schema: `{"type":"object","properties":{},"additionalProperties":true}`, wantErr: "$: additionalProperties must be false"},
		{name: "optional property", schema: looseSchema, wantErr: `$: property "title" must be required`},
		{
			name:    "nested in array items",
			schema:  `{"type":"object","additionalProperties":false,"required":["lines"],"properties":{"lines":{"type":"array","items":{"type":"object","properties":{"goodsCode":{"type":"string"}},"required":["goodsCode"]}}}}`,
			wantErr: "$.properties.lines.items: additionalProperties must be false",
		},
		{
			name:    "nested in anyOf",
			schema:  `{"type":"object","additionalProperties":false,"required":["x"],"properties":{"x":{"anyOf":[{"type":"null"},{"type":"object","properties":{"y":{"type":"string"}},"additionalProperties":false}]}}}`,
			wantErr: `$.properties.x.anyOf[1]: property "y" must be required`,
		},
		{
			name:    "nested in defs",
			schema:  `{"type":"object","additionalProperties":false,"properties":{},"$defs":{"a":{"type":["object","null"],"additionalProperties":false,"properties":{"b":{}}}}}`,
			wantErr: `$.$defs.a: property "b" must be required`,
		},
		{
			name:    "unsupported keyword",
			schema:  `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			wantErr: `$.properties.a: "oneOf" is not supported in strict mode`,
		},
		{
			name:    "boolean subschema",
			schema:  `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":true}}`,
			wantErr: "$.properties.a: a schema must be an object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckStrictSchema(json.RawMessage(tt.schema))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("CheckStrictSchema = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
