package host_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestSwapUnderLoad swaps a guard's generation 20 times while callers keep
// calling it: every call must get the guard's own verdict — none failed,
// lost or doubled — and every replaced generation must close once its last
// call returned. A broken and an incompatible candidate are refused on the
// way and leave the serving generation in place.
func TestSwapUnderLoad(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	v1 := host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}
	v2 := host.Source{Name: "goodv2", Bytes: testdata.Bytes(t, "goodv2")}
	slot, err := h.NewSlot(ctx, "Good", v1, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	var issued, passed, rejected, other atomic.Int64
	var plugins sync.Map // every generation's plugin, to check they closed
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				issued.Add(1)
				reject := (w+i)%3 == 0
				v := slot.Guard(ctx, "acme", before(fmt.Sprintf(`{"reject":%v}`, reject)))
				switch {
				case v.Pass && !reject:
					passed.Add(1)
				case !v.Pass && reject && v.Observation.Code == abi.ArgRejected:
					rejected.Add(1)
				default:
					other.Add(1)
				}
			}
		}(w)
	}
	selfTest := func(ctx context.Context, p *host.Plugin) error {
		if v := p.Guard(ctx, "self-test", before(`{}`)); !v.Pass {
			return fmt.Errorf("self-test call: %+v", v)
		}
		return nil
	}
	for i := 0; i < 20; i++ {
		src := v2
		if i%2 == 1 {
			src = v1
		}
		plugins.Store(slot.Plugin(), true)
		if _, err := slot.Swap(ctx, src, host.Policy{}, selfTest); err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
		if i == 7 {
			if _, err := slot.Swap(ctx, host.Source{Name: "panicstart", Bytes: testdata.Bytes(t, "panicstart")}, host.Policy{}, selfTest); !errors.Is(err, host.ErrLoad) {
				t.Fatalf("broken candidate: %v", err)
			}
			if _, err := slot.Swap(ctx, host.Source{Name: "noresult", Bytes: testdata.Bytes(t, "noresult")}, host.Policy{}, selfTest); !errors.Is(err, host.ErrIncompatible) {
				t.Fatalf("incompatible candidate: %v", err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := slot.Rollback(ctx, selfTest); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if other.Load() != 0 || passed.Load()+rejected.Load() != issued.Load() || issued.Load() < 100 {
		t.Fatalf("issued %d, passed %d, rejected %d, wrong %d", issued.Load(), passed.Load(), rejected.Load(), other.Load())
	}
	hist := slot.History()
	if len(hist) != 22 || hist[len(hist)-1].Ref != "good@2.0.0" || hist[len(hist)-2].Ref != "good@1.0.0" {
		t.Fatalf("history: %d generations, last %s", len(hist), hist[len(hist)-1].Ref)
	}
	// The newest 16 generations keep their counters, the serving one's
	// live; older ones are forgotten.
	var kept uint64
	for _, g := range hist {
		st, ok := slot.GenerationStats(g.Number)
		if want := g.Number > uint64(len(hist)-16); ok != want || ok && st.Digest != g.Digest {
			t.Errorf("generation %d: stats %v (%s), want %v", g.Number, ok, st.Digest, want)
		}
		kept += st.Calls
	}
	if _, ok := slot.GenerationStats(99); ok || kept == 0 {
		t.Errorf("stats of an unknown generation, or no calls counted (%d)", kept)
	}
	plugins.Range(func(k, _ any) bool {
		if st := k.(*host.Plugin).Stats(); st.InstancesLive != 0 || st.InFlight != 0 {
			t.Errorf("retired generation %s still holds %d instances, %d calls", st.Plugin, st.InstancesLive, st.InFlight)
		}
		return true
	})
	t.Logf("%d calls across 21 swaps and a rollback", issued.Load())
}

// BenchmarkSwapLatency measures what swapping adds to a call: the latency of
// calls while a swap happens every 50 ms, against calls with no swap.
func BenchmarkSwapLatency(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	v1 := host.Source{Name: "good", Bytes: testdata.Bytes(b, "good")}
	v2 := host.Source{Name: "goodv2", Bytes: testdata.Bytes(b, "goodv2")}
	for _, swapping := range []bool{false, true} {
		name := "steady"
		if swapping {
			name = "swapping"
		}
		b.Run(name, func(b *testing.B) {
			slot, err := h.NewSlot(ctx, "Good", v1, host.Policy{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer slot.Close()
			done := make(chan struct{})
			var swaps int
			if swapping {
				go func() {
					t := time.NewTicker(50 * time.Millisecond)
					defer t.Stop()
					for i := 0; ; i++ {
						select {
						case <-done:
							return
						case <-t.C:
							src := v2
							if i%2 == 1 {
								src = v1
							}
							if _, err := slot.Swap(ctx, src, host.Policy{}, nil); err == nil {
								swaps++
							}
						}
					}
				}()
			}
			lat := make([]time.Duration, 0, 1<<16)
			var mu sync.Mutex
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				local := make([]time.Duration, 0, 1<<12)
				for pb.Next() {
					start := time.Now()
					if v := slot.Guard(ctx, "acme", before(`{}`)); !v.Pass {
						b.Errorf("call failed: %+v", v.Observation)
					}
					local = append(local, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
			close(done)
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// A swap starts the new generation's instances for the tenants the
// serving one has them for, before it serves: no call of theirs starts one.
func TestSwapWarmsPools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t)
	v1 := host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}
	v2 := host.Source{Name: "goodv2", Bytes: testdata.Bytes(t, "goodv2")}
	slot, err := h.NewSlot(ctx, "Good", v1, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	for _, tenant := range []string{"acme", "globex"} {
		if v := slot.Guard(ctx, tenant, before(`{}`)); !v.Pass {
			t.Fatalf("%s: %+v", tenant, v)
		}
	}
	// The self-test probes the candidate on its pre-warmed instance, which
	// then serves acme; globex gets one more.
	probe := func(ctx context.Context, p *host.Plugin) error {
		if v := p.Guard(ctx, host.ProbeTenant, before(`{}`)); !v.Pass {
			return fmt.Errorf("probe: %+v", v)
		}
		return nil
	}
	if _, err := slot.Swap(ctx, v2, host.Policy{}, probe); err != nil {
		t.Fatal(err)
	}
	st := slot.Plugin().Stats()
	if st.InstancesIdle != 2 || st.InstancesCreated != 2 {
		t.Fatalf("after the swap: %d idle, %d created", st.InstancesIdle, st.InstancesCreated)
	}
	for _, tenant := range []string{"acme", "globex"} {
		if v := slot.Guard(ctx, tenant, before(`{}`)); !v.Pass {
			t.Fatalf("%s: %+v", tenant, v)
		}
	}
	if st := slot.Plugin().Stats(); st.InstancesCreated != 2 {
		t.Fatalf("calls after the swap started %d instances", st.InstancesCreated-2)
	}
}
