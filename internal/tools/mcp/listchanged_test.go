package mcp_test

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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

func toolNames(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// TestToolListChanged: a tool the server adds during a call
// (notifications/tools/list_changed) is in Tools for the round after the
// call, and can be called.
func TestToolListChanged(t *testing.T) {
	t.Parallel()
	for _, tr := range ordersTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := dialOrders(t, tr.cfg(t))
			ts, err := c.ListTools(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"cancel_order", "get_order", "get_receipt", mcp.ReadResourceTool}
			if got := toolNames(ts); !slices.Equal(got, want) {
				t.Fatalf("tools %v, want %v", got, want)
			}
			if got := toolNames(c.Tools()); !slices.Equal(got, want) {
				t.Fatalf("Tools() %v, want %v", got, want)
			}
			call(t, c, "get_order", `{}`) // adds track_order
			want = []string{"cancel_order", "get_order", "get_receipt", mcp.ReadResourceTool, "track_order"}
			if got := toolNames(c.Tools()); !slices.Equal(got, want) {
				t.Fatalf("Tools() after get_order %v, want %v", got, want)
			}
			got := call(t, c, "track_order", `{"orderId":1234567890123456789}`)
			if want := `{"code":200,"msg":"ok","data":{"received":{"orderId":1234567890123456789}}}`; string(got.Content) != want {
				t.Fatalf("track_order content %s", got.Content)
			}
		})
	}
}

// TestToolListChangedBounded: a server that changes its list in a burst
// is listed again a bounded number of times, and Tools ends up with its
// last list.
func TestToolListChangedBounded(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "churn", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	noop := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	}
	srv.AddTool(&sdk.Tool{Name: "churn", InputSchema: obj}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		for i := range 50 {
			srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("t%02d", i), InputSchema: obj}, noop)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var lists atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"tools/list"`)) {
			lists.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c, err := mcp.Dial(t.Context(), mcp.Config{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	call(t, c, "churn", `{}`)
	deadline := time.Now().Add(10 * time.Second)
	for len(c.Tools()) != 51 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(c.Tools()); n != 51 {
		t.Fatalf("Tools() has %d tools, want 51", n)
	}
	time.Sleep(500 * time.Millisecond) // what is still due is listed
	// One listing at start, then one at once and at most one per 200 ms
	// window; 50 notifications must not cost 50 listings.
	if n := lists.Load(); n > 6 {
		t.Fatalf("%d tools/list requests for 50 notifications", n)
	}
}

// TestReadResource: a resource link a tool returned can be read, through
// ReadResourceTool; a URI the server does not have is invalid params.
func TestReadResource(t *testing.T) {
	t.Parallel()
	for _, tr := range ordersTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			c := dialOrders(t, tr.cfg(t))
			if _, err := c.ListTools(t.Context()); err != nil {
				t.Fatal(err)
			}
			link := call(t, c, "get_receipt", `{}`)
			if !strings.Contains(string(link.Content), `"uri":"orders://1234567890123456789/receipt"`) {
				t.Fatalf("get_receipt: %s", link.Content)
			}
			got := call(t, c, mcp.ReadResourceTool, `{"uri":"orders://1234567890123456789/receipt"}`)
			want := `{"contents":[{"uri":"orders://1234567890123456789/receipt","mimeType":"text/plain","text":"receipt of order 1234567890123456789: paid 123456789012345678901234567890"}]}`
			if string(got.Content) != want || got.Text != "receipt of order 1234567890123456789: paid 123456789012345678901234567890" {
				t.Fatalf("read: content %s text %q", got.Content, got.Text)
			}
			for _, args := range []string{`{"uri":"orders://0/receipt"}`, `{"url":"x"}`, `{"uri":""}`, `[]`} {
				_, err := c.CallTool(t.Context(), mcp.ReadResourceTool, json.RawMessage(args))
				if !errors.Is(err, chain.ErrInvalidParams) {
					t.Errorf("read %s: err %v, want chain.ErrInvalidParams", args, err)
				}
			}
		})
	}
}

// TestServersReadResource: with several servers, one ReadResourceTool
// reads on the server that linked the resource.
func TestServersReadResource(t *testing.T) {
	t.Parallel()
	s, err := mcp.DialAll(t.Context(), []mcp.Config{{Name: "peer", URL: goServer(t)}, {Name: "orders", Command: []string{ordersBin}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, err := s.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := slices.IndexFunc(ts, func(t tools.Tool) bool { return t.Name == mcp.ReadResourceTool }); n < 0 {
		t.Fatalf("no %s in %v", mcp.ReadResourceTool, toolNames(ts))
	}
	if _, err := s.CallTool(t.Context(), "get_receipt", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.CallTool(t.Context(), mcp.ReadResourceTool, json.RawMessage(`{"uri":"orders://1234567890123456789/receipt"}`))
	if err != nil || !strings.Contains(got.Text, "paid 123456789012345678901234567890") {
		t.Fatalf("read: %v %q", err, got.Text)
	}
	if _, err := s.CallTool(t.Context(), "get_order", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(s.Tools()), "track_order") {
		t.Fatalf("Servers.Tools() %v lacks track_order", toolNames(s.Tools()))
	}
	if _, err := s.CallTool(t.Context(), "track_order", json.RawMessage(`{"orderId":1}`)); err != nil {
		t.Fatalf("track_order: %v", err)
	}
}
