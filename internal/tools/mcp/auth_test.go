package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// expiring serves MCP over streamable HTTP and refuses every request with
// status once after tools/call has been answered n times: a bearer token
// that expires in the middle of a session.
func expiring(t *testing.T, n int64, status int, contentType, body string) (url string, calls *atomic.Int64) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "expiring", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	calls = &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if calls.Load() >= n {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
			return
		}
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			calls.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, calls
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAuthRefused: a 401 or 403 in the middle of a session is an auth
// failure, with the server's status and words: not retried by the
// invoker, and the model is told to stop; the operator's log says why.
func TestAuthRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string
	}{
		{"401 text", http.StatusUnauthorized, "text/plain", "Unauthorized: token expired\n",
			`HTTP 401 Unauthorized: Unauthorized: token expired (WWW-Authenticate: Bearer error="invalid_token")`},
		{"403 json-rpc", http.StatusForbidden, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"tenant acme may not call ping"}}`,
			`HTTP 403 Forbidden: tenant acme may not call ping (WWW-Authenticate: Bearer error="invalid_token")`},
		{"401 html page", http.StatusUnauthorized, "text/html", "<html><body>" + strings.Repeat("login ", 500) + "</body></html>",
			`HTTP 401 Unauthorized (WWW-Authenticate: Bearer error="invalid_token")`},
		{"401 long body bounded", http.StatusUnauthorized, "text/plain", strings.Repeat("é", 300),
			"HTTP 401 Unauthorized: " + strings.Repeat("é", 100) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, calls := expiring(t, 2, tc.status, tc.contentType, tc.body)
			var log logBuf
			c, err := mcp.Dial(t.Context(), mcp.Config{Name: "expiring", URL: u, BearerToken: "t0k",
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range 2 {
				if got := textOf(t, c, "ping"); got != "pong" {
					t.Fatalf("ping = %q", got)
				}
			}
			_, err = c.CallTool(t.Context(), "ping", json.RawMessage(`{}`))
			if !errors.Is(err, chain.ErrAuth) {
				t.Fatalf("err = %v, want chain.ErrAuth", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tc.want)
			}
			if !strings.Contains(log.String(), "the server refused the credentials") || !strings.Contains(log.String(), "status="+itoa(tc.status)) {
				t.Fatalf("log does not say why:\n%s", log.String())
			}
			// The invoker does not retry it, and tells the model to stop.
			got := (&chain.Invoker{Caller: c}).Invoke(t.Context(), chain.Invocation{Tool: "ping", Args: json.RawMessage(`{}`), Locale: abi.LocaleEN})
			o := got.Observation
			if o.Code != abi.ToolAuthFailed || got.Attempts != 1 {
				t.Fatalf("code %s after %d attempts, want TOOL_AUTH_FAILED after 1", o.Code, got.Attempts)
			}
			if !strings.Contains(o.Message(), tc.want) || !strings.Contains(o.Message(), "call builtin_node_fail") {
				t.Fatalf("message %q", o.Message())
			}
			if n := calls.Load(); n != 2 {
				t.Fatalf("the server ran ping %d times, want 2", n)
			}
		})
	}
}

// TestDialAuthRefused: credentials refused at initialization are an auth
// failure, not an unreachable server.
func TestDialAuthRefused(t *testing.T) {
	t.Parallel()
	u, _ := expiring(t, 0, http.StatusUnauthorized, "text/plain", "bad token")
	_, err := mcp.Dial(t.Context(), mcp.Config{Name: "expiring", URL: u, BearerToken: "t0k"})
	if !errors.Is(err, chain.ErrAuth) || errors.Is(err, chain.ErrUnreachable) || !strings.Contains(err.Error(), "HTTP 401 Unauthorized: bad token") {
		t.Fatalf("err = %v, want chain.ErrAuth with the server's words", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
