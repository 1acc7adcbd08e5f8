package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeMCPServersCollide: two servers offering the same tool stop serve
// at start, naming both.
func TestServeMCPServersCollide(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	bin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	skills, keys, script := serveFixture(t)
	cfg := filepath.Join(t.TempDir(), "warden.yaml")
	writeFile(t, cfg, "tools: mcp-servers\nmcp-servers:\n  - {name: a, command: ["+bin+"]}\n  - {name: b, command: ["+bin+"]}\n")
	var stdout, stderr bytes.Buffer
	code := cmdServe(context.Background(), []string{"--config", cfg, "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys,
		"--model", "scripted", "--model-script", script}, &stdout, &stderr)
	want := `warden serve: --mcp-servers (WARDEN_MCP_SERVERS): tools/mcp: tool offered by two servers: "admin_reset" is offered by servers "a" and "b"; rename one of them on its server, or drop a server` + "\n"
	if code != 1 || !strings.HasSuffix(stderr.String(), want) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeMCPServers: the list form serves a task end to end.
func TestServeMCPServers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	bin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	skills, keys, script := serveFixture(t)
	cfg := filepath.Join(t.TempDir(), "warden.yaml")
	writeFile(t, cfg, "tools: mcp-servers\nmcp-servers:\n  - name: cms\n    command: ["+bin+", -page-size, \"3\"]\n    call-timeout: 5s\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- cmdServe(ctx, []string{"--config", cfg, "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys,
			"--model", "scripted", "--model-script", script, "--shutdown-grace", "2s"}, &stdout, &stderr)
	}()
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	var base string
	for deadline := time.Now().Add(serveStart); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	post := func(path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tenantKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	sess := post("/v1/sessions", "")
	res := post("/v1/sessions/"+sess["id"].(string)+"/messages?wait=5m", `{"text":"find space sp-1"}`)
	if task, _ := res["task"].(map[string]any); task["status"] != "DONE" || task["output"] != "found Marketing" {
		t.Fatalf("message: %v", res)
	}
	cancel()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}
