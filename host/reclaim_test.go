package host_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

func newBudgetHost(t *testing.T, opts host.Options) *host.Host {
	t.Helper()
	opts.CacheDir = testdata.CacheDir(t)
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// TestInstanceBudgetOptionsRefused: a negative budget or idle time is an
// error naming the option.
func TestInstanceBudgetOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts host.Options
		want string
	}{
		{host.Options{MaxInstances: -1}, "host: instance budget: count -1 is negative"},
		{host.Options{MaxInstanceBytes: -5}, "host: instance budget: bytes -5 is negative"},
		{host.Options{InstanceIdle: -time.Second}, "host: instance idle time -1s is negative"},
	} {
		if _, err := host.New(tt.opts); err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// TestInstanceBudgetEvictsLeastRecentlyUsed: with room for three instances,
// tenants calling one after another never hold more than three; each start
// beyond the budget closes the least recently used idle instance, and the
// tenant who called last keeps its instance.
func TestInstanceBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	h := newBudgetHost(t, host.Options{MaxInstances: 3})
	p := load(t, h, "good", host.Policy{Limits: abi.Limits{TimeoutMs: 30000}})
	ctx := context.Background()
	const tenants = 20
	for i := range tenants {
		if v := p.Guard(ctx, fmt.Sprintf("t%02d", i), before(`{}`)); !v.Pass {
			t.Fatalf("tenant %d: %+v", i, v.Observation)
		}
		host.WaitSpares(p)
	}
	u := h.InstanceUsage()
	if u.Peak > 3 || u.Live > 3 {
		t.Fatalf("usage = %+v, want at most 3 instances alive", u)
	}
	st := p.Stats()
	// 20 tenants and the background spares: every instance beyond three
	// was closed to make room, none for idleness.
	if st.InstancesReclaimed != 0 || st.InstancesEvicted == 0 || st.InstancesEvicted != u.Evictions {
		t.Fatalf("stats = evicted %d reclaimed %d, usage %+v", st.InstancesEvicted, st.InstancesReclaimed, u)
	}
	if got := int64(st.InstancesCreated) - int64(st.InstancesClosed); got != st.InstancesLive || int(got) != u.Live {
		t.Fatalf("created %d - closed %d != live %d (usage %d)", st.InstancesCreated, st.InstancesClosed, st.InstancesLive, u.Live)
	}
	// The last tenant's instance is the most recently used: calling again
	// starts nothing.
	host.WaitSpares(p)
	created := p.Stats().InstancesCreated
	if v := p.Guard(ctx, fmt.Sprintf("t%02d", tenants-1), before(`{}`)); !v.Pass {
		t.Fatalf("last tenant again: %+v", v)
	}
	if got := p.Stats().InstancesCreated; got != created {
		t.Fatalf("the last tenant's call started an instance (%d → %d)", created, got)
	}
	if n := host.CrossTenant(p); n != 0 {
		t.Fatalf("an instance was offered to another tenant %d times", n)
	}
}

// TestInstanceBudgetBytes: a byte budget below one instance's memory
// refuses the start, as an unavailable guard (fail closed), with the sizes.
func TestInstanceBudgetBytes(t *testing.T) {
	t.Parallel()
	h := newBudgetHost(t, host.Options{MaxInstanceBytes: 1 << 16})
	p := load(t, h, "good", host.Policy{})
	ctx := context.Background()
	// The spare (admitted at load) serves the first tenant.
	if v := p.Guard(ctx, "acme", before(`{}`)); !v.Pass {
		t.Fatalf("acme: %+v", v)
	}
	host.WaitSpares(p)
	v := p.Guard(ctx, "globex", before(`{}`))
	if o := v.Observation; o == nil || o.Code != abi.GuardUnavailable || o.Outcome != abi.OutcomeRejected {
		t.Fatalf("globex: %+v, want REJECTED GUARD_UNAVAILABLE", v)
	}
	_, err := p.Invoke(ctx, "globex", []byte(`{"abi":1,"kind":"guard","phase":"before","tool":"t","args":{}}`))
	if !errors.Is(err, host.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	want := fmt.Sprintf("exceeds the instance budget of %d bytes", 1<<16)
	if !containsText(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
}

func containsText(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestIdleInstancesReclaimed: once idle for longer than the idle time, the
// tenants' instances are closed and their pools hold none; the plugin's
// spare is kept, and a tenant calling again starts afresh.
func TestIdleInstancesReclaimed(t *testing.T) {
	t.Parallel()
	h := newBudgetHost(t, host.Options{InstanceIdle: time.Hour})
	p := load(t, h, "good", host.Policy{})
	ctx := context.Background()
	const tenants = 6
	for i := range tenants {
		if v := p.Guard(ctx, fmt.Sprintf("t%d", i), before(`{}`)); !v.Pass {
			t.Fatalf("tenant %d: %+v", i, v)
		}
	}
	host.WaitSpares(p)
	// Nothing is idle for an hour: nothing is reclaimed.
	if n := h.ReclaimIdle(ctx, time.Hour); n != 0 {
		t.Fatalf("reclaimed %d instances idle for less than the idle time", n)
	}
	if n := h.ReclaimIdle(ctx, 0); n != tenants {
		t.Fatalf("reclaimed %d, want %d (one per tenant)", n, tenants)
	}
	st := p.Stats()
	if st.InstancesReclaimed != tenants || st.InstancesEvicted != 0 {
		t.Fatalf("reclaimed %d evicted %d, want %d and 0", st.InstancesReclaimed, st.InstancesEvicted, tenants)
	}
	// What is left is the spare at most, which holds no tenant's data.
	if st.InstancesLive > 1 || st.InstancesIdle != int(st.InstancesLive) {
		t.Fatalf("after reclaim: live %d idle %d, want the spare alone", st.InstancesLive, st.InstancesIdle)
	}
	if u := h.InstanceUsage(); u.Live != int(st.InstancesLive) || u.Reclaimed != tenants || u.MemoryBytes != st.InstancesMemoryBytes {
		t.Fatalf("usage %+v, stats live %d memory %d", u, st.InstancesLive, st.InstancesMemoryBytes)
	}
	if v := p.Guard(ctx, "t0", before(`{}`)); !v.Pass {
		t.Fatalf("t0 after reclaim: %+v", v)
	}
}

// TestIdleReaperRuns: the host's own reaper closes idle pooled instances
// after the configured idle time (counts, polled; never a timing).
func TestIdleReaperRuns(t *testing.T) {
	t.Parallel()
	h := newBudgetHost(t, host.Options{InstanceIdle: 20 * time.Millisecond})
	p := load(t, h, "good", host.Policy{})
	ctx := context.Background()
	for i := range 4 {
		if v := p.Guard(ctx, fmt.Sprintf("t%d", i), before(`{}`)); !v.Pass {
			t.Fatalf("tenant %d: %+v", i, v)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); p.Stats().InstancesReclaimed < 4; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("reclaimed %d of 4 idle instances", p.Stats().InstancesReclaimed)
		}
	}
}

// TestInstanceBudgetHammer: more tenants than the budget, calling at once:
// every call is answered (a pass), none is lost, no start goes over the
// budget, and no instance serves two tenants. A call that finds the budget
// taken by busy instances waits within its deadline.
func TestInstanceBudgetHammer(t *testing.T) {
	t.Parallel()
	const budget, tenants, workers, rounds = 4, 24, 8, 3
	h := newBudgetHost(t, host.Options{MaxInstances: budget, InstanceIdle: time.Hour})
	p := load(t, h, "good", host.Policy{Limits: abi.Limits{TimeoutMs: 30000}})
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	calls := 0
	jobs := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tenant := range jobs {
				v := p.Guard(ctx, tenant, before(`{}`))
				mu.Lock()
				calls++
				if !v.Pass {
					failures = append(failures, fmt.Sprintf("%s: %+v", tenant, v.Observation))
				}
				mu.Unlock()
			}
		}()
	}
	for r := range rounds {
		for i := range tenants {
			jobs <- fmt.Sprintf("t%02d", (i*7+r)%tenants)
		}
	}
	close(jobs)
	wg.Wait()
	if calls != rounds*tenants || len(failures) > 0 {
		t.Fatalf("%d calls of %d; failed: %v", calls, rounds*tenants, failures)
	}
	u := h.InstanceUsage()
	if u.Peak > budget {
		t.Fatalf("%d instances alive at once, budget %d", u.Peak, budget)
	}
	if n := host.CrossTenant(p); n != 0 {
		t.Fatalf("an instance was offered to another tenant %d times", n)
	}
	st := p.Stats()
	if st.Calls != rounds*tenants || st.InstancesEvicted == 0 || st.BudgetRefused != 0 {
		t.Fatalf("stats: calls %d evicted %d refused %d", st.Calls, st.InstancesEvicted, st.BudgetRefused)
	}
}
