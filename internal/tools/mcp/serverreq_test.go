package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// goServer serves tools that send the client requests back, over
// streamable HTTP from the test process.
func goServer(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "peer", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	srv.AddTool(&sdk.Tool{Name: "sample", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		_, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
		return text(fmt.Sprint(err)), nil
	})
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return text("error: " + err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return text(res.Action + " " + string(b)), nil
	})
	srv.AddTool(&sdk.Tool{Name: "roots", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return text("error: " + err.Error()), nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(fmt.Sprintf("%d %s", len(uris), strings.Join(uris, ","))), nil
	})
	srv.AddTool(&sdk.Tool{Name: "whoami", InputSchema: obj, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(req.Extra.Header.Get("Authorization") + "|" + req.Extra.Header.Get("X-Tenant")), nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func textOf(t *testing.T, c interface {
	CallTool(context.Context, string, json.RawMessage) (chain.Response, error)
}, tool string) string {
	t.Helper()
	resp, err := c.CallTool(t.Context(), tool, json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return resp.Text
}

// TestServerRequests: what a server asks the client in the middle of a call
// is answered, by default and with the handlers configured.
func TestServerRequests(t *testing.T) {
	t.Parallel()
	u := goServer(t)
	cases := []struct {
		name string
		cfg  mcp.Config
		tool string
		want string
	}{
		{"sampling refused", mcp.Config{}, "sample", "sampling is not offered: warden does not lend the agent's model to tool servers"},
		{"elicitation declined", mcp.Config{}, "ask", "decline null"},
		{"elicitation handler", mcp.Config{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "warden"}}, nil
		}}, "ask", `accept {"name":"warden"}`},
		{"no roots", mcp.Config{}, "roots", "0 "},
		{"roots", mcp.Config{Roots: []*sdk.Root{{URI: "file:///srv/a"}, {URI: "file:///srv/b"}}}, "roots", "2 file:///srv/a,file:///srv/b"},
		{"headers", mcp.Config{BearerToken: "t0k", Headers: map[string]string{"X-Tenant": "acme"}}, "whoami", "Bearer t0k|acme"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.URL = u
			c, err := mcp.Dial(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := textOf(t, c, tc.tool); !strings.Contains(got, tc.want) {
				t.Fatalf("%s: %q, want it to contain %q", tc.tool, got, tc.want)
			}
		})
	}
}

// TestStdoutNoise: lines on a stdio server's stdout that are not JSON-RPC
// are skipped and counted, and the session carries on.
func TestStdoutNoise(t *testing.T) {
	t.Parallel()
	c, err := mcp.Dial(t.Context(), mcp.Config{Command: []string{"sh", "-c",
		`echo "server starting..."; echo "{not json"; echo; exec "$0" "$@"`, cmsBin, "-page-size", pageSize}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-1"}`),
		`{"code":200,"msg":"ok","data":{"spaceId":"sp-1","name":"Marketing","websiteCount":1}}`)
	if n := c.SkippedLines(); n != 2 {
		t.Fatalf("skipped %d lines, want 2", n)
	}
}

// TestServers: several servers as one provider.
func TestServers(t *testing.T) {
	t.Parallel()
	u := goServer(t)
	cms := mcp.Config{Name: "cms", Command: []string{cmsBin, "-page-size", pageSize}}
	s, err := mcp.DialAll(t.Context(), []mcp.Config{cms, {Name: "peer", URL: u, CallTimeout: 7e9}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]string{}
	for _, tl := range list {
		servers[tl.Name] = tl.Server
	}
	if servers["query_space"] != "cms" || servers["whoami"] != "peer" || len(servers) != len(list) {
		t.Fatalf("servers by tool %v", servers)
	}
	resp, err := s.CallTool(t.Context(), "query_space", json.RawMessage(`{"spaceId":"sp-1"}`))
	if err != nil || !strings.Contains(resp.Text, `"name":"Marketing"`) {
		t.Fatalf("query_space via the set: %+v, %v", resp, err)
	}
	if got := textOf(t, s, "whoami"); got != "|" {
		t.Fatalf("whoami: %q", got)
	}
	if d := s.ToolTimeout("whoami"); d != 7e9 {
		t.Fatalf("peer timeout %v", d)
	}
	if d := s.ToolTimeout("query_space"); d != 0 {
		t.Fatalf("cms timeout %v", d)
	}
	_, err = s.CallTool(t.Context(), "no_such_tool", json.RawMessage(`{}`))
	if !errors.Is(err, mcp.ErrUnknownTool) || !errors.Is(err, chain.ErrInvalidParams) || err.Error() != `tools/mcp: unknown tool "no_such_tool": tool invalid params` {
		t.Fatalf("unknown tool: %v", err)
	}

	cases := []struct {
		name string
		cfgs []mcp.Config
		want string
		is   error
	}{
		{"collision", []mcp.Config{cms, {Name: "cms2", Command: cms.Command}},
			`tools/mcp: tool offered by two servers: "admin_reset" is offered by servers "cms" and "cms2"; rename one of them on its server, or drop a server`, mcp.ErrToolCollision},
		{"no servers", nil, "tools/mcp: invalid config: no servers", mcp.ErrConfig},
		{"no name", []mcp.Config{{Command: cms.Command}}, "tools/mcp: invalid config: server 1 has no name", mcp.ErrConfig},
		{"same name", []mcp.Config{cms, cms}, `tools/mcp: invalid config: two servers are named "cms"`, mcp.ErrConfig},
		{"bad server", []mcp.Config{cms, {Name: "x", URL: u, Env: []string{"A=b"}}}, "server x: tools/mcp: invalid config: env and dir are for command servers", mcp.ErrConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := mcp.DialAll(t.Context(), tc.cfgs)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.is) || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
