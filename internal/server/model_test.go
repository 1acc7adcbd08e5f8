package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/server"
)

// A model provider's failure reaches the API's client typed, and the task
// records it as its reason.
func TestModelProviderFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      fakeprovider.Reply
		status     int
		code       string
		message    string
		retryAfter string
	}{
		{
			name:    "401 is the provider's auth, not the caller's",
			reply:   fakeprovider.Unauthorized("sk-wrong-key-0000"),
			status:  http.StatusBadGateway,
			code:    server.CodeModelAuthFailed,
			message: "model: provider authentication failed: HTTP 401 (invalid_api_key): Incorrect API key provided: sk-...0000. You can find your API key at https://platform.openai.com/account/api-keys.",
		},
		{
			name:       "429 with Retry-After",
			reply:      fakeprovider.RateLimited(2500 * time.Millisecond),
			status:     http.StatusTooManyRequests,
			code:       server.CodeModelRateLimited,
			message:    "model: provider rate limited: HTTP 429 (rate_limit_exceeded): Rate limit reached for requests. Please try again in 2.5s.",
			retryAfter: "3",
		},
		{
			name:    "an exhausted quota is not a rate limit: 502, no Retry-After",
			reply:   fakeprovider.InsufficientQuota(),
			status:  http.StatusBadGateway,
			code:    server.CodeModelQuota,
			message: "model: provider quota exhausted: HTTP 429 (insufficient_quota): You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
		},
		{
			name:    "a CDN's 502 page is reduced to its title",
			reply:   fakeprovider.BadGatewayPage(),
			status:  http.StatusBadGateway,
			code:    server.CodeModelUnavailable,
			message: "model: provider unavailable: HTTP 502 Bad Gateway: text/html, 1059 bytes: api.example.com | 502: Bad gateway",
		},
		{
			name:    "context length",
			reply:   fakeprovider.ContextLength(),
			status:  http.StatusUnprocessableEntity,
			code:    server.CodeContextLength,
			message: "model: context length exceeded: HTTP 400 (context_length_exceeded): This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
		},
		{
			name:    "5xx",
			reply:   fakeprovider.Unavailable(),
			status:  http.StatusBadGateway,
			code:    server.CodeModelUnavailable,
			message: "model: provider unavailable: HTTP 503 Service Unavailable: The server is overloaded or not ready yet.",
		},
		{
			name:    "garbage",
			reply:   fakeprovider.Garbage(),
			status:  http.StatusBadGateway,
			code:    server.CodeModelMalformed,
			message: "model: malformed provider response: HTTP 200 OK: the body is not a chat completion (invalid character '<' looking for beginning of value): text/html, 41 bytes: 502 Bad Gateway",
		},
		{
			name:    "other 4xx",
			reply:   fakeprovider.Error(http.StatusNotFound, "The model `gpt-test` does not exist.", "invalid_request_error", "model_not_found"),
			status:  http.StatusBadGateway,
			code:    server.CodeModelRequestRefused,
			message: "model: provider rejected the request: HTTP 404 (model_not_found): The model `gpt-test` does not exist.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prov := fakeprovider.New(t, tt.reply)
			cfg := openai.Defaults(prov.BaseURL(), "", "gpt-test")
			cfg.MaxRetries = 0 // one request: the answer is the provider's first
			m, err := openai.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
				o.NewModel = func(string, string) (model.Model, error) { return m, nil }
			}})
			sid := f.session(t, keyAcme)
			req, err := http.NewRequest("POST", f.ts.URL+"/v1/sessions/"+sid+"/messages?wait=5m", strings.NewReader(`{"text":"帮我建一个网站"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			resp, err := f.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var eb server.ErrorBody
			if err := json.Unmarshal(b, &eb); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if resp.StatusCode != tt.status || eb.Error.Code != tt.code || eb.Error.Message != tt.message {
				t.Errorf("answer %d %q %q\nwant   %d %q %q", resp.StatusCode, eb.Error.Code, eb.Error.Message, tt.status, tt.code, tt.message)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			var task server.Task
			if code, eb := f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1", keyAcme, "", &task); code != http.StatusOK {
				t.Fatalf("task: %d %+v", code, eb)
			}
			if task.Status != "FAILED" || task.Reason != tt.message {
				t.Errorf("task %s, reason %q; want FAILED, %q", task.Status, task.Reason, tt.message)
			}
		})
	}
}
