package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// checks are the three ways a guest's code can run: unchecked (no way to
// stop it: benchmarks only), metered (what Warden runs) and with wazero's
// close-on-context-done (what it ran before).
var checks = []struct {
	name          string
	meter, closes bool
}{
	{"unchecked", false, false},
	{"metered", true, false},
	{"close-on-context-done", false, true},
}

// useCheck makes hosts made from now on run guests the way c says, until
// the benchmark ends.
func useCheck(b *testing.B, meter, closes bool) {
	host.Metering(meter)
	host.CloseOnContextDone(closes)
	b.Cleanup(func() {
		host.Metering(true)
		host.CloseOnContextDone(false)
	})
}

// scanRequest is a request whose arguments are n bytes of ASCII, which the
// asciionly guest classifies byte by byte in a Go loop.
func scanRequest(tb testing.TB, n int) []byte {
	args := `{"s":"` + strings.Repeat("a\\\"b", n/4)[:n-8] + `"}`
	b, err := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "scan", Args: json.RawMessage(args)})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkMetering measures a CPU-bound Go guest (a loop over every byte
// of its arguments) unchecked, metered and under close-on-context-done,
// side by side.
func BenchmarkMetering(b *testing.B) {
	ctx := context.Background()
	for _, size := range []struct {
		name string
		n    int
	}{{"2KiB", 2 << 10}, {"64KiB", 64 << 10}} {
		req := scanRequest(b, size.n)
		for _, c := range checks {
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				useCheck(b, c.meter, c.closes)
				h := newHostNoCache(b)
				p := load(b, h, "asciionly", host.Policy{})
				defer p.Close(ctx)
				for range 200 {
					if v, err := p.Invoke(ctx, "t", req); err != nil || !v.Pass {
						b.Fatalf("%+v %v", v, err)
					}
				}
				b.ReportAllocs()
				// The guest runs on the calling thread: its CPU time per
				// call (cpu-ns/op) is the figure to compare on a busy
				// machine.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0, ok := threadCPU()
				for b.Loop() {
					if v, err := p.Invoke(ctx, "t", req); err != nil || !v.Pass {
						b.Fatalf("%+v %v", v, err)
					}
				}
				if cpu1, _ := threadCPU(); ok {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// BenchmarkStopLateness measures how late a looping guest is stopped after
// its deadline: late-max-ms and late-p99-ms are the host's stop (from the
// refill function) after the deadline; return-max-ms is how much longer
// than its timeout each call took, as its caller sees it.
func BenchmarkStopLateness(b *testing.B) {
	ctx := context.Background()
	const timeout = 20 * time.Millisecond
	for _, c := range checks[1:] {
		b.Run(c.name, func(b *testing.B) {
			useCheck(b, c.meter, c.closes)
			h := newHostNoCache(b)
			p := load(b, h, "loop", host.Policy{Limits: abi.Limits{TimeoutMs: int(timeout / time.Millisecond), MemoryPages: 512}})
			defer p.Close(ctx)
			late, stop := host.StopLateness()
			defer stop()
			var over []time.Duration
			for b.Loop() {
				start := time.Now()
				v := p.Guard(ctx, "t", before(`{}`))
				over = append(over, time.Since(start)-timeout)
				if v.Observation == nil || v.Observation.Code != abi.PluginTimeout {
					b.Fatalf("verdict %+v, want PLUGIN_TIMEOUT", v)
				}
			}
			if l := late("loop@1.0.0"); len(l) > 0 {
				b.ReportMetric(ms(slices.Max(l)), "late-max-ms")
				b.ReportMetric(ms(p99(l)), "late-p99-ms")
			}
			b.ReportMetric(ms(slices.Max(over)), "return-max-ms")
			b.ReportMetric(ms(p99(over)), "return-p99-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func p99(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*99/100]
}

// BenchmarkGCPause runs a GC-heavy goroutine beside a guest that loops
// until its deadline and reports the longest stop-the-world pause of the
// collections during the run (gc-pause-max-ms): compiled wasm has no
// safepoint, so a collection waits until the guest comes back to Go.
func BenchmarkGCPause(b *testing.B) {
	ctx := context.Background()
	for _, c := range checks[1:] {
		b.Run(c.name, func(b *testing.B) {
			useCheck(b, c.meter, c.closes)
			h := newHostNoCache(b)
			p := load(b, h, "loop", host.Policy{Limits: abi.Limits{TimeoutMs: 200, MemoryPages: 512}})
			defer p.Close(ctx)
			var gcBefore debug.GCStats
			debug.ReadGCStats(&gcBefore)
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					p.Guard(ctx, "t", before(`{}`))
				}()
				deadline := time.Now().Add(200 * time.Millisecond)
				var keep [][]byte
				for time.Now().Before(deadline) {
					keep = append(keep, make([]byte, 64<<10))
					if len(keep) > 256 {
						keep = keep[:0]
					}
					runtime.GC()
				}
				wg.Wait()
			}
			var after debug.GCStats
			debug.ReadGCStats(&after)
			var worst time.Duration
			for i, end := range after.PauseEnd {
				if end.After(start) && i < len(after.Pause) {
					worst = max(worst, after.Pause[i])
				}
			}
			b.ReportMetric(ms(worst), "gc-pause-max-ms")
			b.ReportMetric(float64(after.NumGC-gcBefore.NumGC)/float64(b.N), "gcs/op")
		})
	}
}

// BenchmarkRewrite measures the one-time rewrite of first-party plugins at
// load (without the memo that spares a reload): the metering alone, and the
// whole rewrite (metering, then the call-stack bound).
func BenchmarkRewrite(b *testing.B) {
	for _, pkg := range []string{"./plugins/guards/paramcontract/cmd", "./plugins/builtins/control/cmd"} {
		path, err := testdata.Build(pkg)
		if err != nil {
			b.Fatal(err)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(filepath.Dir(pkg + "/")))
		for _, r := range []struct {
			name string
			f    func([]byte) ([]byte, error)
		}{{"meter", host.MeterModule}, {"meter+stack", host.RewriteModule}} {
			b.Run(name+"/"+r.name, func(b *testing.B) {
				b.SetBytes(int64(len(bin)))
				for b.Loop() {
					if _, err := r.f(bin); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
