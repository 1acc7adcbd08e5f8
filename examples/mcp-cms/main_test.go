package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGoRun starts the server with go run, speaks MCP to it over stdio by
// hand, and checks one read.
func TestGoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping go run in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_space","arguments":{"spaceId":"sp-2"}}}`,
	}, "\n") + "\n"
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pr
	var out lockedBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if _, err := pw.WriteString(in); err != nil {
		t.Fatal(err)
	}
	// Close stdin once the answer to id 2 is there: the server then exits.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), `"id":2`) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go run: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil || msg.ID != 2 {
			continue
		}
		want := `{"code":200,"msg":"ok","data":{"name":"Engineering","spaceId":"sp-2","websiteCount":0}}`
		if got := string(msg.Result.StructuredContent); got != want {
			t.Fatalf("query_space\n got %s\nwant %s", got, want)
		}
		return
	}
	t.Fatalf("no answer to tools/call in:\n%s", out.String())
}

// lockedBuffer is a bytes.Buffer the child writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
