package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/internal/tools/mcp"
)

// TestEverythingServer proves the client against the reference server.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	bin := everythingServer.path(t)
	c, err := mcp.Dial(t.Context(), mcp.Config{Command: []string{bin, "stdio"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var echo bool
	for _, tl := range list {
		if tl.Name != "echo" {
			continue
		}
		echo = true
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["message"] == nil {
			t.Fatalf("echo input schema %s (%v)", tl.InputSchema, err)
		}
	}
	if !echo {
		t.Fatalf("no echo tool among %d tools", len(list))
	}
	resp, err := c.CallTool(t.Context(), "echo", json.RawMessage(`{"message":"hello warden"}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.IsError || resp.Text != "Echo: hello warden" || string(resp.Content) != `"Echo: hello warden"` {
		t.Fatalf("echo: %+v (content %s)", resp, resp.Content)
	}
}
