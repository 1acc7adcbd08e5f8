package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// TestStartInsideACallObeysTheCallDeadline: a call that has to start an
// instance (a pool miss) is bounded by its own deadline, not by the 10 s
// load deadline: slowinstance's second instance takes 3 s to start, and a
// 300 ms call waiting for it ends in PLUGIN_TIMEOUT in about 300 ms, freeing
// its pool slot.
func TestStartInsideACallObeysTheCallDeadline(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "slowinstance", host.Policy{Limits: abi.Limits{TimeoutMs: 300}, PoolSize: 1, Capabilities: []abi.Capability{abi.CapClock}})
	defer p.Close(context.Background())
	ctx := context.Background()
	// The pre-warmed instance serves the first tenant at once.
	if v := p.Guard(ctx, "acme", before(`{}`)); !v.Pass {
		t.Fatalf("first call: %+v", v)
	}
	const slack = 700 * time.Millisecond
	for i := range 2 { // twice: the first miss gave its pool slot back
		start := time.Now()
		_, err := p.Invoke(ctx, "globex", []byte(`{"abi":1,"kind":"guard","phase":"before","tool":"t","args":{}}`))
		took := time.Since(start)
		var ce *host.CallError
		if !errors.As(err, &ce) || ce.Code != abi.PluginTimeout || !errors.Is(err, host.ErrTimeout) {
			t.Fatalf("miss %d: err = %v, want PLUGIN_TIMEOUT", i, err)
		}
		const want = "host: slowinstance@1.0.0: plugin timed out: 300ms: host: slowinstance@1.0.0: new instance: did not start within the call's 300ms: plugin timed out"
		if err.Error() != want {
			t.Fatalf("miss %d: error =\n%s\nwant\n%s", i, err, want)
		}
		if took < 300*time.Millisecond || took > 300*time.Millisecond+slack {
			t.Fatalf("miss %d took %v, want the 300ms deadline (+%v)", i, took, slack)
		}
	}
	v := p.Guard(ctx, "globex", before(`{}`))
	if o := v.Observation; o == nil || o.Code != abi.PluginTimeout || o.Outcome != abi.OutcomeRejected {
		t.Fatalf("guard verdict = %+v, want REJECTED PLUGIN_TIMEOUT", v)
	}
	if st := p.Stats(); st.Timeouts != 3 {
		t.Errorf("Timeouts = %d, want 3", st.Timeouts)
	}
	// The tenant whose instance started is not held up.
	if v := p.Guard(ctx, "acme", before(`{}`)); !v.Pass {
		t.Fatalf("acme after the misses: %+v", v)
	}
}

// TestStartInsideACallCanceled: the caller's own cancellation during a start
// is not the plugin's timeout.
func TestStartInsideACallCanceled(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "slowinstance", host.Policy{Limits: abi.Limits{TimeoutMs: 2000}, Capabilities: []abi.Capability{abi.CapClock}})
	defer p.Close(context.Background())
	if v := p.Guard(context.Background(), "acme", before(`{}`)); !v.Pass {
		t.Fatalf("first call: %+v", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Invoke(ctx, "globex", []byte(`{"abi":1,"kind":"guard","phase":"before","tool":"t","args":{}}`))
	var ce *host.CallError
	if !errors.As(err, &ce) || ce.Code != abi.GuardUnavailable || !errors.Is(err, host.ErrUnavailable) {
		t.Fatalf("err = %v, want GUARD_UNAVAILABLE", err)
	}
}
