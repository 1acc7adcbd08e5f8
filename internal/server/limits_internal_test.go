package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/chain"
)

// heldCaller counts the calls that reached it and the most at once; a call
// blocks until release is closed.
type heldCaller struct {
	mu            sync.Mutex
	calls, now, n int
	entered       chan struct{}
	release       chan struct{}
}

func (h *heldCaller) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	h.mu.Lock()
	h.calls++
	h.now++
	h.n = max(h.n, h.now)
	h.mu.Unlock()
	h.entered <- struct{}{}
	<-h.release
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
	return chain.Response{Content: json.RawMessage(`{}`)}, nil
}

func (h *heldCaller) ToolTimeout(tool string) time.Duration {
	if tool == "slow" {
		return time.Minute
	}
	return 0
}

// TestLimitedCaller: a tenant's tool calls in flight never exceed
// MaxToolCalls; a call that gets no slot before its deadline is not sent
// and fails as unreachable, never as a timeout.
func TestLimitedCaller(t *testing.T) {
	t.Parallel()
	h := &heldCaller{entered: make(chan struct{}, 8), release: make(chan struct{})}
	u := newLimiter(Limits{MaxToolCalls: 1}, map[string]string{"k": "acme"}).tenants["acme"]
	c := &limitedCaller{Caller: h, tenant: "acme", slots: u.slots}
	if got := c.ToolTimeout("slow"); got != time.Minute {
		t.Fatalf("ToolTimeout = %v, want the underlying caller's 1m", got)
	}
	done := make(chan error, 2)
	go func() { _, err := c.CallTool(context.Background(), "a", nil); done <- err }()
	<-h.entered

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "b", nil)
	want := "server: tenant acme has 1 tool calls in flight, the most it may have; b was not sent: tool unreachable"
	if !errors.Is(err, chain.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if ctx.Err() != nil {
		t.Fatal("the wait ran into the attempt's deadline; it must end before it")
	}

	// A call without a deadline waits for the slot and then runs.
	go func() { _, err := c.CallTool(context.Background(), "c", nil); done <- err }()
	close(h.release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if h.calls != 2 || h.n != 1 {
		t.Fatalf("the tool saw %d calls, at most %d at once; want 2 and 1", h.calls, h.n)
	}
}

// TestLimitsValidate: negative and non-finite limits are refused at New.
func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	for _, l := range []Limits{{Rate: -1}, {Burst: -1}, {MaxSessions: -1}, {MaxRuns: -1}, {MaxToolCalls: -1}} {
		if err := l.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err = %v, want ErrConfig", l, err)
		}
	}
	if err := DefaultLimits().validate(); err != nil {
		t.Fatal(err)
	}
}
