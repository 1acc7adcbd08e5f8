package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/loadgen"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	seq := func(n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = ms(i + 1)
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value, p50", []time.Duration{ms(7)}, 50, ms(7)},
		{"one value, p99", []time.Duration{ms(7)}, 99, ms(7)},
		{"two values, p50 is the lower", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
		{"two values, p51 is the upper", []time.Duration{ms(1), ms(2)}, 51, ms(2)},
		{"10 values, p50", seq(10), 50, ms(5)},
		{"10 values, p90", seq(10), 90, ms(9)},
		{"10 values, p91 rounds up", seq(10), 91, ms(10)},
		{"10 values, p99", seq(10), 99, ms(10)},
		{"100 values, p50", seq(100), 50, ms(50)},
		{"100 values, p90", seq(100), 90, ms(90)},
		{"100 values, p99", seq(100), 99, ms(99)},
		{"100 values, p100", seq(100), 100, ms(100)},
		{"1000 values, p99", seq(1000), 99, ms(990)},
		{"1001 values, p99 rounds up", seq(1001), 99, ms(991)},
		{"p0 clamps to the first", seq(10), 0, ms(1)},
		{"p above 100 clamps to the last", seq(10), 150, ms(10)},
		{"ties", []time.Duration{ms(1), ms(3), ms(3), ms(3), ms(9)}, 50, ms(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadgen.Percentile(tt.sorted, tt.p); got != tt.want {
				t.Fatalf("Percentile(p%v of %d) = %s, want %s", tt.p, len(tt.sorted), got, tt.want)
			}
		})
	}
}

func TestNewRefusesUnboundedRuns(t *testing.T) {
	tests := []struct {
		name string
		opt  loadgen.Options
		msg  string
	}{
		{"no request bound", loadgen.Options{Duration: time.Second}, "loadgen: invalid options: Requests must be positive, got 0"},
		{"negative request bound", loadgen.Options{Requests: -1, Duration: time.Second}, "loadgen: invalid options: Requests must be positive, got -1"},
		{"no time bound", loadgen.Options{Requests: 10}, "loadgen: invalid options: Duration must be positive, got 0s"},
		{"negative time bound", loadgen.Options{Requests: 10, Duration: -time.Second}, "loadgen: invalid options: Duration must be positive, got -1s"},
		{"negative interval", loadgen.Options{Requests: 10, Duration: time.Second, Interval: -time.Millisecond}, "loadgen: invalid options: Interval must not be negative, got -1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadgen.New(tt.opt)
			if !errors.Is(err, loadgen.ErrOptions) || err.Error() != tt.msg {
				t.Fatalf("New: %v, want %q", err, tt.msg)
			}
		})
	}
}

func TestRunRefuses(t *testing.T) {
	ok := func(context.Context, int) error { return nil }
	tests := []struct {
		name    string
		workers []loadgen.Request
		msg     string
	}{
		{"no workers", nil, "loadgen: cannot run: no workers"},
		{"nil request function", []loadgen.Request{ok, nil}, "loadgen: cannot run: worker 1 has no request function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := loadgen.New(loadgen.Options{Requests: 1, Duration: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Run(context.Background(), tt.workers...); !errors.Is(err, loadgen.ErrRun) || err.Error() != tt.msg {
				t.Fatalf("Run: %v, want %q", err, tt.msg)
			}
		})
	}
	t.Run("second run", func(t *testing.T) {
		g, err := loadgen.New(loadgen.Options{Requests: 1, Duration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Run(context.Background(), ok); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Run(context.Background(), ok); !errors.Is(err, loadgen.ErrRun) || err.Error() != "loadgen: cannot run: the generator already ran" {
			t.Fatalf("second Run: %v", err)
		}
	})
}

// TestRequestBound: with time to spare, the workers together start exactly
// the bound's requests, each worker numbering its own from 0.
func TestRequestBound(t *testing.T) {
	const workers, bound = 4, 1000
	g, err := loadgen.New(loadgen.Options{Requests: bound, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	seqs := make([][]int, workers)
	fns := make([]loadgen.Request, workers)
	for w := range fns {
		fns[w] = func(_ context.Context, seq int) error {
			calls.Add(1)
			seqs[w] = append(seqs[w], seq)
			return nil
		}
	}
	r, err := g.Run(context.Background(), fns...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bound != loadgen.BoundRequests || calls.Load() != bound || r.Total.Requests != bound || r.Total.Errors != 0 || g.Completed() != bound {
		t.Fatalf("bound %s, %d calls, %d recorded, %d errors, %d completed; want requests, %d", r.Bound, calls.Load(), r.Total.Requests, r.Total.Errors, g.Completed(), bound)
	}
	for w, s := range seqs {
		for i, seq := range s {
			if seq != i {
				t.Fatalf("worker %d: request %d has seq %d", w, i, seq)
			}
		}
	}
	if len(r.Phases) != 1 || r.Phases[0].Phase != loadgen.DefaultPhase || r.Phases[0].Requests != bound {
		t.Fatalf("phases = %+v", r.Phases)
	}
}

// fakeClock is a clock that only moves when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestDurationBound: requests start while less than Duration has passed;
// the one in flight when it passes finishes and counts.
func TestDurationBound(t *testing.T) {
	clock := newClock()
	g, err := loadgen.New(loadgen.Options{Requests: 1000, Duration: ms(95), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.Run(context.Background(), func(context.Context, int) error {
		clock.Advance(ms(10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Requests start at 0, 10, …, 90 ms; at 100 ms the bound has passed.
	want := loadgen.Stats{Phase: "total", Requests: 10, P50: ms(10), P90: ms(10), P99: ms(10), Max: ms(10), Elapsed: ms(100)}
	if r.Bound != loadgen.BoundDuration || r.Elapsed != ms(100) || r.Total != want {
		t.Fatalf("bound %s, elapsed %s, total %+v; want duration, 100ms, %+v", r.Bound, r.Elapsed, r.Total, want)
	}
	if r.Total.Throughput() != 100 {
		t.Fatalf("throughput %v req/s, want 100", r.Total.Throughput())
	}
}

// TestPhases splits one run into windows: each request counts in the phase
// current when it started, and each window gets the wall time it was
// current. The request that switches the phase started in the old one.
func TestPhases(t *testing.T) {
	clock := newClock()
	g, err := loadgen.New(loadgen.Options{Requests: 12, Duration: time.Hour, Phase: "steady", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var boom = errors.New("boom")
	r, err := g.Run(context.Background(), func(_ context.Context, seq int) error {
		switch seq {
		case 4:
			g.SetPhase("swapping")
		case 7:
			g.SetPhase("steady")
		}
		// Latency seq+1 ms; the swapping window's requests 5, 6 and 7
		// take 6, 7 and 8 ms, and 6 fails.
		clock.Advance(ms(seq + 1))
		if seq == 6 {
			return boom
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	steady, _ := r.Phase("steady")
	swapping, ok := r.Phase("swapping")
	if !ok || len(r.Phases) != 2 || r.Phases[0].Phase != "steady" || r.Phases[1].Phase != "swapping" {
		t.Fatalf("phases = %+v", r.Phases)
	}
	// Steady: requests 0-4 and 8-11 (1-5 and 9-12 ms), current from 0 to
	// 10 ms (the switch happens at the start of request 4, at 10 ms) and
	// from 28 to 78 ms.
	wantSteady := loadgen.Stats{Phase: "steady", Requests: 9, P50: ms(5), P90: ms(12), P99: ms(12), Max: ms(12), Elapsed: ms(10 + 50)}
	wantSwapping := loadgen.Stats{Phase: "swapping", Requests: 3, Errors: 1, P50: ms(7), P90: ms(8), P99: ms(8), Max: ms(8), Elapsed: ms(18)}
	if steady != wantSteady || swapping != wantSwapping {
		t.Fatalf("steady %+v\nswapping %+v\nwant %+v\nand %+v", steady, swapping, wantSteady, wantSwapping)
	}
	if r.Total.Requests != 12 || r.Total.Errors != 1 || r.Elapsed != ms(78) {
		t.Fatalf("total %+v, elapsed %s", r.Total, r.Elapsed)
	}
	if len(r.Failures) != 1 || r.Failures[0].Seq != 6 || r.Failures[0].Phase != "swapping" || !errors.Is(r.Failures[0].Err, boom) {
		t.Fatalf("failures = %+v", r.Failures)
	}
	if _, ok := r.Phase("rollback"); ok {
		t.Fatal("a phase never entered was reported")
	}
	// Merged, the two windows are the whole run; an unknown phase adds
	// nothing.
	want := loadgen.Stats{Phase: "both", Requests: 12, Errors: 1, P50: ms(6), P90: ms(11), P99: ms(12), Max: ms(12), Elapsed: ms(78)}
	if m := r.Merge("both", "steady", "swapping", "rollback"); m != want {
		t.Fatalf("merged %+v, want %+v", m, want)
	}
	if m := r.Merge("swapping only", "swapping"); m.Requests != 3 || m.P50 != ms(7) || m.Elapsed != ms(18) {
		t.Fatalf("swapping merged alone: %+v", m)
	}
	if r.Total.P50 != ms(6) || r.Total.P90 != ms(11) {
		t.Fatalf("total %+v", r.Total)
	}
}

// TestFailuresKept: every failure is counted, the first KeptFailures are
// kept with their errors.
func TestFailuresKept(t *testing.T) {
	g, err := loadgen.New(loadgen.Options{Requests: 60, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.Run(context.Background(), func(_ context.Context, seq int) error {
		if seq%3 == 0 {
			return fmt.Errorf("request %d failed", seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total.Requests != 60 || r.Total.Errors != 20 || len(r.Failures) != loadgen.KeptFailures {
		t.Fatalf("%d requests, %d errors, %d kept", r.Total.Requests, r.Total.Errors, len(r.Failures))
	}
	for i, f := range r.Failures {
		if f.Worker != 0 || f.Seq != 3*i || f.Err.Error() != fmt.Sprintf("request %d failed", 3*i) || f.Phase != loadgen.DefaultPhase {
			t.Fatalf("failure %d = %+v", i, f)
		}
	}
}

// TestStopAndContext: Stop lets the request in flight finish and starts no
// other; the end of the context does the same, and is passed to requests.
func TestStopAndContext(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		g, err := loadgen.New(loadgen.Options{Requests: 100, Duration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		r, err := g.Run(context.Background(), func(_ context.Context, seq int) error {
			if seq == 3 {
				g.Stop()
				g.Stop() // idempotent
			}
			return nil
		})
		if err != nil || r.Bound != loadgen.BoundStopped || r.Total.Requests != 4 || r.Total.Errors != 0 {
			t.Fatalf("err %v, bound %s, %d requests, %d errors", err, r.Bound, r.Total.Requests, r.Total.Errors)
		}
	})
	t.Run("context", func(t *testing.T) {
		g, err := loadgen.New(loadgen.Options{Requests: 100, Duration: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, err := g.Run(ctx, func(ctx context.Context, seq int) error {
			if seq == 3 {
				cancel()
			}
			return ctx.Err()
		})
		if err != nil || r.Bound != loadgen.BoundContext || r.Total.Requests != 4 || r.Total.Errors != 1 {
			t.Fatalf("err %v, bound %s, %d requests, %d errors", err, r.Bound, r.Total.Requests, r.Total.Errors)
		}
		if !errors.Is(r.Failures[0].Err, context.Canceled) {
			t.Fatalf("failure = %+v", r.Failures[0])
		}
	})
}

// TestConcurrentPhases hammers SetPhase and Completed while workers run, for
// the race detector; every request is recorded in exactly one phase.
func TestConcurrentPhases(t *testing.T) {
	g, err := loadgen.New(loadgen.Options{Requests: 5000, Duration: time.Hour, Phase: "a"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; g.Completed() < 5000; i++ {
			g.SetPhase([]string{"a", "b", "c"}[i%3])
			_ = g.Phase()
		}
	}()
	fns := make([]loadgen.Request, 4)
	for i := range fns {
		fns[i] = func(context.Context, int) error { return nil }
	}
	r, err := g.Run(context.Background(), fns...)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	sum := 0
	var names []string
	for _, p := range r.Phases {
		sum += p.Requests
		names = append(names, p.Phase)
	}
	if sum != 5000 || r.Total.Requests != 5000 {
		t.Fatalf("phases hold %d requests, total %d, want 5000", sum, r.Total.Requests)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}[:len(names)]) {
		t.Fatalf("phases in order %v", names)
	}
}

// TestInterval: a paced worker starts request seq at seq×Interval, or at
// once when it is behind; it does not wait for a turn past the bounds.
func TestInterval(t *testing.T) {
	tests := []struct {
		name     string
		requests int
		duration time.Duration
		bound    loadgen.Bound
		// starts are the requests' start times, sleeps the waits, in ms.
		starts, sleeps []int
		elapsed        int
	}{
		// Request 2 takes 25 ms: 3, 4 and 5 run late, back to back; 6 is
		// on time again.
		{"request bound", 7, time.Hour, loadgen.BoundRequests,
			[]int{0, 10, 20, 45, 48, 51, 60}, []int{7, 7, 6}, 63},
		// The wait for request 6's turn (at 60 ms) ends past the 58 ms
		// bound: request 6 does not start.
		{"duration bound", 100, ms(58), loadgen.BoundDuration,
			[]int{0, 10, 20, 45, 48, 51}, []int{7, 7, 6}, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			t0 := clock.Now()
			g, err := loadgen.New(loadgen.Options{Requests: tt.requests, Duration: tt.duration, Interval: ms(10), Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			var sleeps, starts []int
			g.SetSleep(func(_ context.Context, _ <-chan struct{}, d time.Duration) {
				sleeps = append(sleeps, int(d/time.Millisecond))
				clock.Advance(d)
			})
			r, err := g.Run(context.Background(), func(_ context.Context, seq int) error {
				starts = append(starts, int(clock.Now().Sub(t0)/time.Millisecond))
				if seq == 2 {
					clock.Advance(ms(25))
				} else {
					clock.Advance(ms(3))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Bound != tt.bound || !slices.Equal(starts, tt.starts) || !slices.Equal(sleeps, tt.sleeps) || r.Elapsed != ms(tt.elapsed) {
				t.Fatalf("bound %s, starts %v, sleeps %v, elapsed %s; want %s, %v, %v, %dms", r.Bound, starts, sleeps, r.Elapsed, tt.bound, tt.starts, tt.sleeps, tt.elapsed)
			}
		})
	}
}
