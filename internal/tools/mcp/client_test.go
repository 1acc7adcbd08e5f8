package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// cmsBin is the example server, ordersBin the exactness server, built once
// by TestMain.
var cmsBin, ordersBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcp-cms-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmsBin = filepath.Join(dir, "mcp-cms")
	cmd := exec.Command("go", "build", "-o", cmsBin, "github.com/agentwarden/warden/examples/mcp-cms")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcp-cms: %v\n%s", err, out)
		return 1
	}
	ordersBin = filepath.Join(dir, "mcporders")
	cmd = exec.Command("go", "build", "-o", ordersBin, "github.com/agentwarden/warden/internal/testdata/mcporders")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcporders: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// pageSize is small so tools/list takes several pages.
const pageSize = "3"

// stdio starts the example server as a child of the client.
func stdio(t *testing.T, args ...string) *mcp.Client {
	t.Helper()
	c, err := mcp.Dial(t.Context(), mcp.Config{Command: append([]string{cmsBin, "-page-size", pageSize}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// httpServer starts the example server on a loopback port and returns its
// URL and process.
func httpServer(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(cmsBin, "-page-size", pageSize, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "mcp-cms: listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return u, cmd
		}
	}
	t.Fatalf("mcp-cms did not report its address: %v", sc.Err())
	return "", nil
}

func streamable(t *testing.T) (*mcp.Client, *exec.Cmd) {
	t.Helper()
	u, cmd := httpServer(t)
	c, err := mcp.Dial(t.Context(), mcp.Config{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, cmd
}

var transports = []struct {
	name string
	dial func(t *testing.T) *mcp.Client
}{
	{"stdio", func(t *testing.T) *mcp.Client { return stdio(t) }},
	{"http", func(t *testing.T) *mcp.Client { c, _ := streamable(t); return c }},
}

// canon re-encodes JSON so that key order does not matter.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func call(t *testing.T, c *mcp.Client, tool, args string) chain.Response {
	t.Helper()
	resp, err := c.CallTool(t.Context(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return resp
}

func wantContent(t *testing.T, resp chain.Response, want string) {
	t.Helper()
	if resp.IsError {
		t.Fatalf("IsError, text %q", resp.Text)
	}
	if got := canon(t, resp.Content); got != canon(t, []byte(want)) {
		t.Fatalf("content\n got %s\nwant %s", got, want)
	}
}

func arm(t *testing.T, c *mcp.Client, faults string) {
	t.Helper()
	if r := call(t, c, "admin_set_faults", faults); r.IsError {
		t.Fatalf("admin_set_faults: %s", r.Text)
	}
}

func TestListTools(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.dial(t)
			list, err := c.ListTools(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list {
				names = append(names, tl.Name)
			}
			want := "admin_reset admin_set_faults admin_stats create_article create_website find_website get_article list_tags list_websites publish_article query_space search_articles"
			if got := strings.Join(names, " "); got != want {
				t.Fatalf("tools\n got %s\nwant %s", got, want)
			}
			for _, tl := range list {
				if tl.Name != "query_space" {
					continue
				}
				if tl.Title != "Query space" || tl.Description != "Look up a space by id, or by its exact name, and count its websites." {
					t.Fatalf("title %q description %q", tl.Title, tl.Description)
				}
				wantIn := `{"additionalProperties":false,"properties":{"name":{"description":"the space's exact name, when the id is not known","type":"string"},"spaceId":{"description":"space id, e.g. sp-1","type":"string"}},"required":[],"type":"object"}`
				if got := canon(t, tl.InputSchema); got != wantIn {
					t.Fatalf("input schema\n got %s\nwant %s", got, wantIn)
				}
				var out struct {
					Required []string `json:"required"`
				}
				if err := json.Unmarshal(tl.OutputSchema, &out); err != nil || strings.Join(out.Required, ",") != "code,msg,data" {
					t.Fatalf("output schema %s (%v)", tl.OutputSchema, err)
				}
			}
		})
	}
}

func TestCallTool(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.dial(t)

			// A read.
			wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-1"}`),
				`{"code":200,"msg":"ok","data":{"spaceId":"sp-1","name":"Marketing","websiteCount":1}}`)

			// A write, then a read that sees it.
			wantContent(t, call(t, c, "create_website", `{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}`),
				`{"code":200,"msg":"ok","data":{"websiteId":"ws-2","spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}}`)
			wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-1"}`),
				`{"code":200,"msg":"ok","data":{"spaceId":"sp-1","name":"Marketing","websiteCount":2}}`)

			// A business failure is a normal response.
			wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-9"}`),
				`{"code":50001,"msg":"space sp-9 not found","data":null}`)

			// An empty result is a success with no items.
			wantContent(t, call(t, c, "search_articles", `{"query":"nothing like this"}`),
				`{"code":200,"msg":"ok","data":{"items":[],"total":0}}`)

			// The tool's own failure: isError, not an error.
			call(t, c, "create_article", `{"websiteId":"ws-1","title":"Blank"}`)
			resp := call(t, c, "publish_article", `{"articleId":"art-3"}`)
			if !resp.IsError || resp.Text != "article has an empty body and cannot be published" || resp.Content != nil {
				t.Fatalf("publish_article: %+v", resp)
			}
		})
	}
}

func TestCallFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		faults  string // admin_set_faults arguments; "" arms nothing
		tool    string
		args    string
		timeout time.Duration
		want    error
		text    string // the error's text must contain this
	}{
		{name: "missing argument", tool: "list_websites", args: `{}`, want: chain.ErrInvalidParams, text: "invalid params: spaceId is required"},
		{name: "unknown argument", tool: "query_space", args: `{"spaceId":"sp-1","x":1}`, want: chain.ErrInvalidParams, text: "invalid params: unknown argument x"},
		{name: "unknown tool", tool: "no_such_tool", args: `{}`, want: chain.ErrInvalidParams, text: `unknown tool "no_such_tool"`},
		{name: "rpc error", faults: `{"failNext":1,"failMode":"rpc"}`, tool: "query_space", args: `{"spaceId":"sp-1"}`, want: chain.ErrRPC, text: "injected internal error"},
		{name: "timeout", faults: `{"failNext":1,"failMode":"timeout"}`, tool: "query_space", args: `{"spaceId":"sp-1"}`, timeout: 300 * time.Millisecond, want: chain.ErrTimeout, text: "context deadline exceeded"},
		{name: "slow", faults: `{"delayMs":2000}`, tool: "get_article", args: `{"articleId":"art-1"}`, timeout: 200 * time.Millisecond, want: chain.ErrTimeout, text: "context deadline exceeded"},
		{name: "crash mid-call", faults: `{"failNext":1,"failMode":"crash"}`, tool: "query_space", args: `{"spaceId":"sp-1"}`, want: chain.ErrIO},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				c := tr.dial(t)
				if tc.faults != "" {
					arm(t, c, tc.faults)
				}
				ctx := t.Context()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				resp, err := c.CallTool(ctx, tc.tool, json.RawMessage(tc.args))
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v (response %+v), want %v", err, resp, tc.want)
				}
				if !strings.HasPrefix(err.Error(), "tools/mcp: call "+tc.tool+" on ") || !strings.Contains(err.Error(), tc.text) {
					t.Fatalf("err = %q, want the tools/mcp prefix and %q", err, tc.text)
				}
				if tc.want == chain.ErrTimeout && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v does not wrap its cause", err)
				}
			})
		}
	}
}

// TestCommitThenTimeout: the write times out but took effect.
func TestCommitThenTimeout(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := tr.dial(t)
			arm(t, c, `{"commitTimeoutNext":1,"tool":"create_website"}`)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			_, err := c.CallTool(ctx, "create_website", json.RawMessage(`{"spaceId":"sp-2","name":"Docs","domain":"docs.example.com"}`))
			if !errors.Is(err, chain.ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			wantContent(t, call(t, c, "list_websites", `{"spaceId":"sp-2"}`),
				`{"code":200,"msg":"ok","data":{"items":[{"websiteId":"ws-2","spaceId":"sp-2","name":"Docs","domain":"docs.example.com"}],"total":1}}`)
			wantContent(t, call(t, c, "admin_stats", `{}`),
				`{"code":200,"msg":"ok","data":{"delayMs":0,"failNext":0,"failMode":"","commitTimeoutNext":0,"tool":"create_website","calls":{"create_website":1,"list_websites":1}}}`)
		})
	}
}

// TestStdioReconnect: a child killed between calls is restarted once, with
// fresh state.
func TestStdioReconnect(t *testing.T) {
	t.Parallel()
	c := stdio(t)
	call(t, c, "create_website", `{"spaceId":"sp-1","name":"Shop","domain":"shop.example.com"}`)
	done := c.SessionDone()
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-1"}`),
		`{"code":200,"msg":"ok","data":{"spaceId":"sp-1","name":"Marketing","websiteCount":1}}`)
}

// TestHTTPServerGone: a killed HTTP server is unreachable.
func TestHTTPServerGone(t *testing.T) {
	t.Parallel()
	c, cmd := streamable(t)
	call(t, c, "query_space", `{"spaceId":"sp-1"}`)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// A call may go out on a pooled keep-alive connection the server's
	// death closed (ErrIO) — the pool can hold one for the calls and one
	// for the standalone stream; once those are dropped, nothing listens.
	for i := 1; ; i++ {
		_, err := c.CallTool(t.Context(), "query_space", json.RawMessage(`{"spaceId":"sp-1"}`))
		if errors.Is(err, chain.ErrUnreachable) {
			break
		}
		if !errors.Is(err, chain.ErrIO) || i == 4 {
			t.Fatalf("call %d: err = %v, want ErrIO on a dead pooled connection, then ErrUnreachable", i, err)
		}
	}
}

func TestDialUnreachable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  mcp.Config
	}{
		{"no such command", mcp.Config{Command: []string{filepath.Join(t.TempDir(), "missing")}}},
		{"command exits", mcp.Config{Command: []string{cmsBin, "-fail-mode", "bogus", "-fail-next", "1"}}},
		{"connection refused", mcp.Config{URL: "http://127.0.0.1:1/mcp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcp.Dial(t.Context(), tc.cfg)
			if !errors.Is(err, chain.ErrUnreachable) || !strings.HasPrefix(err.Error(), "tools/mcp: connect ") {
				t.Fatalf("err = %v, want a tools/mcp ErrUnreachable", err)
			}
		})
	}
}

func TestStderrKept(t *testing.T) {
	t.Parallel()
	_, err := mcp.Dial(t.Context(), mcp.Config{Command: []string{cmsBin, "-fail-mode", "bogus", "-fail-next", "1"}})
	want := `mcp-cms: fail mode "bogus" is not one of [business iserror rpc invalid timeout crash]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want the child's stderr %q", err, want)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  mcp.Config
		want string
	}{
		{"empty", mcp.Config{}, "tools/mcp: invalid config: neither command nor url is set"},
		{"both", mcp.Config{Command: []string{"x"}, URL: "http://x"}, "tools/mcp: invalid config: both command and url are set"},
		{"empty argv0", mcp.Config{Command: []string{""}}, "tools/mcp: invalid config: empty command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcp.Dial(t.Context(), tc.cfg)
			if !errors.Is(err, mcp.ErrConfig) || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	c := stdio(t)
	pid := c.PID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("child %d still there after Close: %v", pid, err)
	}
	_, err := c.CallTool(t.Context(), "query_space", json.RawMessage(`{"spaceId":"sp-1"}`))
	if !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
