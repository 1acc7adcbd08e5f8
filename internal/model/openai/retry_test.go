package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/model"
)

func TestCompleteRetries(t *testing.T) {
	t.Parallel()
	const (
		boom     = `{"error":{"message":"boom","type":"server_error","code":null}}`
		slowDown = `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`
		badKey   = `{"error":{"message":"Incorrect API key provided: sk-test-SECRET-0123456789.","type":"invalid_request_error","code":"invalid_api_key"}}`
	)
	ok := reply{status: http.StatusOK, body: okBody}
	tests := []struct {
		name         string
		configure    func(*Config)
		replies      []reply
		cancelAfter  time.Duration
		wantErr      string
		wantIs       []error
		wantRequests int
		minElapsed   time.Duration
	}{
		{
			name:         "429 with Retry-After seconds, then success",
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "1"}, body: slowDown}, ok},
			wantRequests: 2,
			minElapsed:   time.Second,
		},
		{
			name:         "429 with retry-after-ms, then success",
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After-Ms": "40", "Retry-After": "9"}, body: slowDown}, ok},
			wantRequests: 2,
			minElapsed:   40 * time.Millisecond,
		},
		{
			name:         "503 then success",
			replies:      []reply{{status: 503, body: "upstream unavailable"}, ok},
			wantRequests: 2,
		},
		{
			name:         "500 retried then failure",
			replies:      []reply{{status: 500, body: boom}},
			wantErr:      "model/openai: giving up: model: provider unavailable: HTTP 500 Internal Server Error: boom (after 3 attempts)",
			wantIs:       []error{model.ErrUnavailable},
			wantRequests: 3,
		},
		{
			name:         "429 exhausted",
			configure:    func(c *Config) { c.MaxRetries = 1 },
			replies:      []reply{{status: 429, body: slowDown}},
			wantErr:      "model/openai: giving up: model: provider rate limited: HTTP 429 (rate_limit_exceeded): slow down (after 2 attempts)",
			wantIs:       []error{model.ErrRateLimited},
			wantRequests: 2,
		},
		{
			name:         "Retry-After past the call deadline is not waited for",
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "30"}, body: slowDown}, ok},
			wantErr:      "model/openai: giving up, the next wait of 30s passes the call deadline: model: provider rate limited: HTTP 429 (rate_limit_exceeded): slow down",
			wantIs:       []error{model.ErrRateLimited},
			wantRequests: 1,
		},
		{
			name:         "401 not retried, key redacted",
			replies:      []reply{{status: 401, body: badKey}, ok},
			wantErr:      "model/openai: model: provider authentication failed: HTTP 401 (invalid_api_key): Incorrect API key provided: [redacted].",
			wantIs:       []error{model.ErrAuth},
			wantRequests: 1,
		},
		{
			name:         "403 not retried",
			replies:      []reply{{status: 403, body: `{"error":{"message":"region not supported"}}`}, ok},
			wantErr:      "model/openai: model: provider authentication failed: HTTP 403 Forbidden: region not supported",
			wantIs:       []error{model.ErrAuth},
			wantRequests: 1,
		},
		{
			name:         "400 not retried",
			replies:      []reply{{status: 400, body: "bad things"}, ok},
			wantErr:      "model/openai: model: provider rejected the request: HTTP 400 Bad Request: application/json, 10 bytes: bad things",
			wantIs:       []error{model.ErrBadRequest},
			wantRequests: 1,
		},
		{
			name:         "attempt timeout retried, then success",
			configure:    func(c *Config) { c.AttemptTimeout = 100 * time.Millisecond },
			replies:      []reply{{status: 200, body: okBody, delay: time.Second}, ok},
			wantRequests: 2,
		},
		{
			name:         "attempt timeouts exhausted",
			configure:    func(c *Config) { c.AttemptTimeout = 50 * time.Millisecond; c.MaxRetries = 1 },
			replies:      []reply{{status: 200, body: okBody, delay: time.Second}},
			wantErr:      "model/openai: giving up: model: provider timed out: the attempt exceeded 50ms (after 2 attempts)",
			wantIs:       []error{model.ErrTimeout},
			wantRequests: 2,
		},
		{
			name:         "call deadline",
			configure:    func(c *Config) { c.CallTimeout = 150 * time.Millisecond },
			replies:      []reply{{status: 200, body: okBody, delay: 2 * time.Second}},
			wantErr:      "model/openai: model: provider timed out: the call deadline passed",
			wantIs:       []error{model.ErrTimeout, context.DeadlineExceeded},
			wantRequests: 1,
		},
		{
			name:         "caller cancels",
			replies:      []reply{{status: 200, body: okBody, delay: 2 * time.Second}},
			cancelAfter:  50 * time.Millisecond,
			wantErr:      "model/openai: call cancelled: context canceled",
			wantIs:       []error{context.Canceled},
			wantRequests: 1,
		},
		{
			name: "caller cancels during the backoff wait",
			configure: func(c *Config) {
				c.InitialBackoff, c.MaxBackoff, c.CallTimeout = time.Minute, time.Minute, 2*time.Minute
			},
			replies:      []reply{{status: 500, body: boom}},
			cancelAfter:  50 * time.Millisecond,
			wantErr:      "model/openai: call cancelled while waiting to retry (context canceled): model: provider unavailable: HTTP 500 Internal Server Error: boom",
			wantIs:       []error{context.Canceled, model.ErrUnavailable},
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, tt.replies...)
			cfg := testConfig(srv.URL)
			if tt.configure != nil {
				tt.configure(&cfg)
			}
			ctx := context.Background()
			if tt.cancelAfter > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(tt.cancelAfter, cancel)
			}
			start := time.Now()
			got, err := newTestClient(t, cfg).Complete(ctx, userOnly)
			elapsed := time.Since(start)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got.Message.Content != "ok" {
					t.Errorf("content = %q, want ok", got.Message.Content)
				}
			} else if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Complete error = %v, want %q", err, tt.wantErr)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) = false", target)
				}
			}
			if n := len(srv.requests()); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			if elapsed < tt.minElapsed {
				t.Errorf("elapsed %s, want at least %s", elapsed, tt.minElapsed)
			}
		})
	}
}

func TestCompleteNetworkError(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, reply{status: http.StatusOK, body: okBody})
	cfg := testConfig(srv.URL)
	srv.Close()
	_, err := newTestClient(t, cfg).Complete(context.Background(), userOnly)
	wantPrefix := fmt.Sprintf("model/openai: giving up: model: provider unavailable: Post %q:", cfg.BaseURL+"/chat/completions")
	wantSuffix := "connect: connection refused (after 3 attempts)"
	if err == nil || !strings.HasPrefix(err.Error(), wantPrefix) || !strings.HasSuffix(err.Error(), wantSuffix) {
		t.Fatalf("Complete error = %v, want %q…%q", err, wantPrefix, wantSuffix)
	}
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("errors.Is(err, model.ErrUnavailable) = false")
	}
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Status != 0 || pe.Attempts != 3 || pe.Err == nil {
		t.Errorf("ProviderError = %+v, want no status, 3 attempts and the transport error", pe)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		code, typ string
		message   string
		want      error
		wantRetry bool
	}{
		{302, "", "", "", model.ErrMalformed, false},
		{400, "", "", "bad", model.ErrBadRequest, false},
		{400, "context_length_exceeded", "invalid_request_error", "too long", model.ErrContextLength, false},
		{400, "", "BadRequestError", "This model's maximum context length is 4096 tokens.", model.ErrContextLength, false},
		{413, "", "", "prompt exceeds the context window", model.ErrContextLength, false},
		{401, "invalid_api_key", "", "", model.ErrAuth, false},
		{403, "", "", "", model.ErrAuth, false},
		{404, "model_not_found", "", "", model.ErrBadRequest, false},
		{408, "", "", "", model.ErrTimeout, true},
		{409, "", "", "", model.ErrUnavailable, true},
		{422, "", "", "", model.ErrBadRequest, false},
		{429, "rate_limit_exceeded", "requests", "", model.ErrRateLimited, true},
		{429, "insufficient_quota", "insufficient_quota", "", model.ErrQuota, false},
		{500, "", "", "", model.ErrUnavailable, true},
		{502, "", "", "", model.ErrUnavailable, true},
		{504, "", "", "context length", model.ErrUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.code), func(t *testing.T) {
			t.Parallel()
			kind, retry := classify(tt.status, tt.code, tt.typ, tt.message)
			if kind != tt.want || retry != tt.wantRetry {
				t.Errorf("classify(%d, %q) = %v, %t; want %v, %t", tt.status, tt.code, kind, retry, tt.want, tt.wantRetry)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:00:03 GMT"}, 3 * time.Second},
		{"HTTP date in the past", map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon", "Retry-After-Ms": "x"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c, err := New(Defaults("https://api.example.com/v1", "", "m"))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for n, w := range want {
		if got := c.backoff(n); got != w*time.Second {
			t.Errorf("backoff(%d) = %s, want %s", n, got, w*time.Second)
		}
	}
	if got := c.backoff(200); got != 30*time.Second {
		t.Errorf("backoff(200) = %s, want 30s", got)
	}
	for range 1000 {
		if got := equalJitter(4 * time.Second); got < 2*time.Second || got > 4*time.Second {
			t.Fatalf("equalJitter(4s) = %s, want within [2s, 4s]", got)
		}
	}
}

func TestLogsNeverCarryTheKey(t *testing.T) {
	t.Parallel()
	const key = "sk-test-SECRET-0123456789"
	srv := newFakeServer(t,
		reply{status: 429, header: map[string]string{"Retry-After-Ms": "1"}, body: `{"error":{"message":"key ` + key + ` is throttled"}}`},
		reply{status: 401, body: `{"error":{"message":"key ` + key + ` revoked"}}`},
	)
	var logs bytes.Buffer
	cfg := testConfig(srv.URL)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c := newTestClient(t, cfg)
	req := model.Request{
		Messages: userOnly.Messages,
		Tools:    []model.Tool{{Name: "loose", Parameters: []byte(oneOfSchema), Strict: true}},
	}
	_, err := c.Complete(context.Background(), req)
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("error = %v, want an error without the key", err)
	}
	out := logs.String()
	for _, want := range []string{
		`msg="model/openai: tool sent without strict schema" tool=loose reason="$.properties.q: \"oneOf\" is not supported in strict mode"`,
		`msg="model/openai: retrying" attempt=1 wait=1ms error="model: provider rate limited: HTTP 429 Too Many Requests: key [redacted] is throttled"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s\nlogs:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) {
		t.Errorf("logs carry the API key:\n%s", out)
	}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v|%+v|%#v", cfg, cfg, cfg)} {
		if strings.Contains(s, key) || !strings.Contains(s, `APIKey:"[redacted]"`) {
			t.Errorf("formatted config = %s, want the key redacted", s)
		}
	}
}
