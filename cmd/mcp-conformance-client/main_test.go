package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRun: the exit status and message for each way the command is called,
// against a server with the tools_call scenario's add_numbers tool that
// wants the bearer token "tok".
func TestRun(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "add", Version: "1"}, nil)
	type in struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "add_numbers"}, func(_ context.Context, _ *sdk.CallToolRequest, x in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("The sum of %g and %g is %g", x.A, x.B, x.A+x.B)}}}, nil, nil
	})
	mh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mh.ServeHTTP(w, r)
	}))
	defer ts.Close()

	const usage = "usage: mcp-conformance-client [-scenario NAME] [-bearer-token-env VAR] [-timeout D] URL\n"
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		// stderr is the whole of it, or its first line when usage follows.
		stderr string
	}{
		{name: "scenario from the variable", args: []string{"-bearer-token-env", "TOKEN", ts.URL},
			env: map[string]string{"MCP_CONFORMANCE_SCENARIO": "tools_call", "TOKEN": "tok"}},
		{name: "scenario flag wins", args: []string{"-scenario", "tools_call", "-bearer-token-env", "TOKEN", ts.URL},
			env: map[string]string{"MCP_CONFORMANCE_SCENARIO": "nope", "TOKEN": "tok"}},
		{name: "no URL", env: map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize"}, code: 2, stderr: usage},
		{name: "no scenario", args: []string{ts.URL}, code: 2, stderr: usage},
		{name: "empty token variable", args: []string{"-scenario", "initialize", "-bearer-token-env", "TOKEN", ts.URL}, code: 2,
			stderr: "mcp-conformance-client: -bearer-token-env: TOKEN is empty\n"},
		{name: "unknown scenario", args: []string{"-scenario", "auth/basic-cimd", ts.URL}, code: 1,
			stderr: `mcp-conformance-client: conformance: unknown scenario "auth/basic-cimd" (known: elicitation-sep1034-client-defaults, initialize, sse-retry, tools_call)` + "\n"},
		{name: "refused without the token", args: []string{"-scenario", "initialize", ts.URL}, code: 1,
			stderr: `mcp-conformance-client: conformance: initialize: tools/mcp: connect initialize: tool authorization refused: HTTP 401 Unauthorized: no` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), tt.args, func(k string) string { return tt.env[k] }, &stderr)
			got := stderr.String()
			if tt.stderr == usage {
				got, _ = bytes.NewBufferString(got).ReadString('\n')
			}
			if code != tt.code || got != tt.stderr {
				t.Fatalf("exit %d, stderr %q\nwant %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
