package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/conformance"
)

// addNumbers is the tools_call scenario's server, behind a bearer token:
// every request must carry "Authorization: Bearer <token>". It records each
// request that reached it (its JSON-RPC method, or the HTTP method when it
// has none), the Authorization header it carried, and whether it got
// through.
type addNumbers struct {
	token string
	mu    sync.Mutex
	seen  []string
}

func (a *addNumbers) handler() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "add-numbers", Version: "1"}, nil)
	type in struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "add_numbers", Description: "Add two numbers"},
		func(_ context.Context, _ *sdk.CallToolRequest, x in) (*sdk.CallToolResult, any, error) {
			text := fmt.Sprintf("The sum of %g and %g is %g", x.A, x.B, x.A+x.B)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != a.token {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	guarded := auth.RequireBearerToken(verify, nil)(mcpHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		what := r.Method
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct{ Method string }
			_ = json.Unmarshal(body, &msg)
			what = msg.Method
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		a.mu.Lock()
		i := len(a.seen)
		a.seen = append(a.seen, "")
		a.mu.Unlock()
		record := func() {
			a.mu.Lock()
			a.seen[i] = fmt.Sprintf("%s[%s]%d", what, r.Header.Get("Authorization"), sw.code)
			a.mu.Unlock()
		}
		sw.onHeader = record
		guarded.ServeHTTP(sw, r)
		record()
	})
}

// statusWriter notes the status of a response as its header is written,
// and passes flushes on, so a streamed response streams.
type statusWriter struct {
	http.ResponseWriter
	code     int
	onHeader func()
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.onHeader()
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestBearerToken drives the tools_call exchange against a server that
// requires a bearer token: with the token every request carries it and gets
// through; with none or a wrong one the first requests are refused 401 and
// the connection fails as an auth failure, with the server's words.
func TestBearerToken(t *testing.T) {
	const (
		token        = "t0ken-for-the-test-server"
		unauthorized = `conformance: tools_call: tools/mcp: connect tools_call: tool authorization refused: HTTP 401 Unauthorized: `
	)
	tests := []struct {
		name    string
		token   string
		wantErr string // "" for success
		// wantSeen are the requests the server saw, with their
		// Authorization header and the status they got.
		wantSeen []string
	}{
		{name: "the token", token: token, wantSeen: []string{
			// The SDK asks server/discover first, then initializes;
			// the standalone GET stream opens beside the calls.
			"DELETE[Bearer " + token + "]204",
			"GET[Bearer " + token + "]200",
			"initialize[Bearer " + token + "]200",
			"notifications/initialized[Bearer " + token + "]202",
			"server/discover[Bearer " + token + "]200",
			"tools/call[Bearer " + token + "]200",
			"tools/list[Bearer " + token + "]200",
		}},
		{name: "no token", token: "", wantErr: unauthorized + "no bearer token", wantSeen: []string{"initialize[]401", "server/discover[]401"}},
		{name: "a wrong token", token: "not-the-token", wantErr: unauthorized + "invalid token",
			wantSeen: []string{"initialize[Bearer not-the-token]401", "server/discover[Bearer not-the-token]401"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &addNumbers{token: token}
			ts := httptest.NewServer(a.handler())
			defer ts.Close()
			err := conformance.Run(t.Context(), "tools_call", ts.URL, conformance.Options{BearerToken: tt.token})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !errors.Is(err, chain.ErrAuth) || errors.Is(err, chain.ErrUnreachable) || err.Error() != tt.wantErr {
				t.Fatalf("error %v\nwant %s (auth)", err, tt.wantErr)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			// Sorted: the GET stream races the calls.
			slices.Sort(a.seen)
			if !slices.Equal(a.seen, tt.wantSeen) {
				t.Fatalf("requests the server saw:\n got %q\nwant %q", a.seen, tt.wantSeen)
			}
		})
	}
}

// TestRunErrors: an unknown scenario is refused before any connection; a
// server that lacks the scenario's tool fails the exchange.
func TestRunErrors(t *testing.T) {
	a := &addNumbers{token: "x"}
	ts := httptest.NewServer(a.handler())
	defer ts.Close()
	tests := []struct {
		scenario string
		want     error
		msg      string
	}{
		{"auth/metadata-default", conformance.ErrScenario, `conformance: unknown scenario "auth/metadata-default" (known: elicitation-sep1034-client-defaults, initialize, sse-retry, tools_call)`},
		{"sse-retry", conformance.ErrExchange, "conformance: sse-retry: conformance: unexpected exchange: tool test_reconnection is not listed"},
	}
	for _, tt := range tests {
		err := conformance.Run(t.Context(), tt.scenario, ts.URL, conformance.Options{BearerToken: "x"})
		if !errors.Is(err, tt.want) || err.Error() != tt.msg {
			t.Fatalf("%s: error %v\nwant %s", tt.scenario, err, tt.msg)
		}
	}
}
