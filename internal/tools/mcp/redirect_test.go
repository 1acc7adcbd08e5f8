package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/tools/mcp"
)

// seenHeaders serves MCP (a whoami tool echoing the credentials it got)
// and records the Authorization and X-Tenant of every request.
type seenHeaders struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seenHeaders) handler() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "peer", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			who := req.Extra.Header.Get("Authorization") + "|" + req.Extra.Header.Get("X-Tenant")
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: who}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Tenant"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// credentialed counts the requests that carried a credential.
func (s *seenHeaders) credentialed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if r != "|" {
			n++
		}
	}
	return n
}

// TestRedirectKeepsCredentials: the token and headers go to the configured
// origin only; a redirect elsewhere is refused when they are configured,
// and followed (without them) when none are.
func TestRedirectKeepsCredentials(t *testing.T) {
	t.Parallel()
	creds := mcp.Config{BearerToken: "t0k", Headers: map[string]string{"X-Tenant": "acme"}}
	tests := []struct {
		name      string
		cfg       mcp.Config
		sameHost  bool   // the redirect stays on the first server
		wantErr   string // "" = the call answers want
		want      string
		wantOther int // requests with credentials the second server saw
	}{
		{name: "token, redirect to another host: refused", cfg: creds,
			wantErr: "tools/mcp: peer: refusing a redirect to another origin (OTHER): the configured token and headers are for FIRST only; configure the URL the server redirects to"},
		{name: "no credentials, redirect to another host: followed", want: "|"},
		{name: "token, redirect on the same origin: followed with them", cfg: creds, sameHost: true, want: "Bearer t0k|acme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var first, second seenHeaders
			other := httptest.NewServer(second.handler())
			t.Cleanup(other.Close)
			mux := http.NewServeMux()
			mux.Handle("/mcp", first.handler())
			mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
				to := other.URL + "/mcp"
				if tt.sameHost {
					to = "/mcp"
				}
				http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			})
			ts := httptest.NewServer(mux)
			t.Cleanup(ts.Close)
			cfg := tt.cfg
			cfg.Name, cfg.URL = "peer", ts.URL+"/old"
			c, err := mcp.Dial(t.Context(), cfg)
			if tt.wantErr != "" {
				want := strings.NewReplacer("OTHER", "http://"+other.Listener.Addr().String(), "FIRST", "http://"+ts.Listener.Addr().String()).Replace(tt.wantErr)
				if err == nil {
					c.Close()
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Dial error = %v, want it to contain %q", err, want)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if got := textOf(t, c, "whoami"); got != tt.want {
					t.Fatalf("whoami = %q, want %q", got, tt.want)
				}
			}
			if n := second.credentialed(); n != tt.wantOther {
				t.Fatalf("the other host saw %d requests with credentials, want %d", n, tt.wantOther)
			}
		})
	}
}
