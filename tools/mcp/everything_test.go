package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentwarden/warden/tools/mcp"
)

// everything is the reference server from the npm registry, pinned. CI
// installs it ahead of the tests with:
//
//	npm install --no-save --no-audit --no-fund \
//	  --prefix "$HOME/.cache/warden/npm/server-everything@2026.8.31" \
//	  @modelcontextprotocol/server-everything@2026.8.31
//
// WARDEN_NPM_CACHE overrides $HOME/.cache/warden/npm.
const (
	everythingPkg     = "@modelcontextprotocol/server-everything"
	everythingVersion = "2026.8.31"
)

// everythingBin returns the installed server, installing it when npm is
// there; it skips the test when the package cannot be had.
func everythingBin(t *testing.T) string {
	t.Helper()
	root := os.Getenv("WARDEN_NPM_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skipf("skipping: no home directory for the npm cache: %v", err)
		}
		root = filepath.Join(home, ".cache", "warden", "npm")
	}
	prefix := filepath.Join(root, "server-everything@"+everythingVersion)
	bin := filepath.Join(prefix, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("skipping: npm is not installed, so %s@%s cannot be fetched", everythingPkg, everythingVersion)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, everythingPkg+"@"+everythingVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("skipping: npm could not install %s@%s: %v\n%s", everythingPkg, everythingVersion, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("npm installed %s@%s but %s is missing", everythingPkg, everythingVersion, bin)
	}
	return bin
}

// TestEverythingServer proves the client against the reference server.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	bin := everythingBin(t)
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
