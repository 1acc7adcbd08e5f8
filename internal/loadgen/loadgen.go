package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Request runs one request of a worker; seq counts the worker's own
// requests from 0. A returned error counts the request as failed. Requests
// of one worker never overlap; requests of different workers do.
type Request func(ctx context.Context, seq int) error

// Options bound a run. Both bounds are required: a load that only ends
// when the count is reached can hang a test on a slow machine, and one
// that only ends by time does an unknown amount of work.
type Options struct {
	// Requests bounds the requests started by all workers together (> 0).
	Requests int
	// Duration bounds the wall time in which requests start (> 0). A
	// request in flight when it passes is not cut: it finishes and counts.
	Duration time.Duration
	// Interval paces each worker: its request seq starts no earlier than
	// seq×Interval after the run started, so that a run can offer a load
	// below what the system serves; a worker that falls behind runs its
	// requests back to back until it catches up. 0 runs every worker
	// back to back (a closed loop at saturation).
	Interval time.Duration
	// Phase names the phase the run starts in; "" means DefaultPhase.
	Phase string
	// Now is the clock; nil means time.Now. Tests give a fake one.
	Now func() time.Time
}

// DefaultPhase is the phase of a run whose Options name none.
const DefaultPhase = "run"

// KeptFailures is how many failures a Result keeps with their errors; the
// rest are only counted.
const KeptFailures = 10

// Bound is what ended a run.
type Bound string

// The ends of a run.
const (
	BoundRequests Bound = "requests" // Options.Requests were started
	BoundDuration Bound = "duration" // Options.Duration passed
	BoundStopped  Bound = "stopped"  // Stop was called
	BoundContext  Bound = "context"  // Run's context ended
)

// Generator runs one bounded load. Create it with New; SetPhase, Stop and
// Completed may be called from any goroutine, before or during Run.
type Generator struct {
	opt   Options
	now   func() time.Time
	sleep func(ctx context.Context, stop <-chan struct{}, d time.Duration)

	// phase is the index in wins of the current phase.
	phase atomic.Int32
	mu    sync.Mutex
	wins  []*window
	ran   bool
	start time.Time

	issued    atomic.Int64
	completed atomic.Int64
	bound     atomic.Pointer[Bound]
	stop      chan struct{}
	stopOnce  sync.Once
}

// window is a phase's share of the run's wall time.
type window struct {
	name    string
	elapsed time.Duration
	since   time.Time // when it last became current, once the run started
}

// New checks the options and returns a generator in its first phase.
func New(o Options) (*Generator, error) {
	switch {
	case o.Requests <= 0:
		return nil, fmt.Errorf("%w: Requests must be positive, got %d", ErrOptions, o.Requests)
	case o.Duration <= 0:
		return nil, fmt.Errorf("%w: Duration must be positive, got %s", ErrOptions, o.Duration)
	case o.Interval < 0:
		return nil, fmt.Errorf("%w: Interval must not be negative, got %s", ErrOptions, o.Interval)
	}
	if o.Phase == "" {
		o.Phase = DefaultPhase
	}
	g := &Generator{opt: o, now: o.Now, sleep: sleep, stop: make(chan struct{})}
	if g.now == nil {
		g.now = time.Now
	}
	g.wins = []*window{{name: o.Phase}}
	return g, nil
}

// SetPhase makes name the current phase: requests that start from now on
// are recorded under it, and its window's wall time runs. A name used
// before resumes that phase.
func (g *Generator) SetPhase(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at := g.now()
	cur := g.wins[g.phase.Load()]
	if cur.name == name {
		return
	}
	if g.ran {
		cur.elapsed += at.Sub(cur.since)
	}
	i := g.index(name)
	g.wins[i].since = at
	g.phase.Store(int32(i))
}

// index returns the window of name, adding it; g.mu is held.
func (g *Generator) index(name string) int {
	for i, w := range g.wins {
		if w.name == name {
			return i
		}
	}
	g.wins = append(g.wins, &window{name: name})
	return len(g.wins) - 1
}

// Phase returns the current phase.
func (g *Generator) Phase() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wins[g.phase.Load()].name
}

// Completed returns how many requests have returned so far, so that a
// controller can pace itself by the load's progress rather than by time.
func (g *Generator) Completed() int { return int(g.completed.Load()) }

// Stop ends the run: no request starts after it, those in flight finish.
func (g *Generator) Stop() { g.stopOnce.Do(func() { close(g.stop) }) }

// sample is one request as recorded.
type sample struct {
	phase   int32
	latency time.Duration
	failed  bool
}

// Failure is a failed request kept with its error.
type Failure struct {
	Worker, Seq int
	Phase       string
	Err         error
}

// Run starts one goroutine per request function and returns when every
// worker has stopped: after a bound, Stop or the end of ctx. ctx is passed
// to every request, so its end cuts requests in flight; the other ends let
// them finish. A Generator runs once.
func (g *Generator) Run(ctx context.Context, workers ...Request) (Result, error) {
	if len(workers) == 0 {
		return Result{}, fmt.Errorf("%w: no workers", ErrRun)
	}
	for i, w := range workers {
		if w == nil {
			return Result{}, fmt.Errorf("%w: worker %d has no request function", ErrRun, i)
		}
	}
	g.mu.Lock()
	if g.ran {
		g.mu.Unlock()
		return Result{}, fmt.Errorf("%w: the generator already ran", ErrRun)
	}
	g.ran = true
	g.start = g.now()
	g.wins[g.phase.Load()].since = g.start
	g.mu.Unlock()

	samples := make([][]sample, len(workers))
	failures := make([][]Failure, len(workers))
	var wg sync.WaitGroup
	for i, fn := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				if b, ok := g.ended(ctx, seq); ok {
					g.bound.CompareAndSwap(nil, &b)
					return
				}
				ph := g.phase.Load()
				t0 := g.now()
				err := fn(ctx, seq)
				lat := g.now().Sub(t0)
				samples[i] = append(samples[i], sample{phase: ph, latency: lat, failed: err != nil})
				if err != nil && len(failures[i]) < KeptFailures {
					failures[i] = append(failures[i], Failure{Worker: i, Seq: seq, Err: err, Phase: g.name(ph)})
				}
				g.completed.Add(1)
			}
		}()
	}
	wg.Wait()

	g.mu.Lock()
	end := g.now()
	cur := g.wins[g.phase.Load()]
	cur.elapsed += end.Sub(cur.since)
	cur.since = end
	wins := make([]window, len(g.wins))
	for i, w := range g.wins {
		wins[i] = *w
	}
	g.mu.Unlock()
	return g.result(end.Sub(g.start), wins, samples, failures), nil
}

// ended reports whether a worker must stop before its request seq, and
// why, after waiting for the request's turn when the run is paced. A
// request it may start is counted against Options.Requests.
func (g *Generator) ended(ctx context.Context, seq int) (Bound, bool) {
	if b, ok := g.over(ctx); ok {
		return b, true
	}
	if g.opt.Interval > 0 {
		if g.issued.Load() >= int64(g.opt.Requests) {
			return BoundRequests, true // no need to wait for a turn that never comes
		}
		if d := g.start.Add(time.Duration(seq) * g.opt.Interval).Sub(g.now()); d > 0 {
			g.sleep(ctx, g.stop, d)
			if b, ok := g.over(ctx); ok {
				return b, true
			}
		}
	}
	if g.issued.Add(1) > int64(g.opt.Requests) {
		return BoundRequests, true
	}
	return "", false
}

// over reports whether the run is over for a reason other than its
// request bound.
func (g *Generator) over(ctx context.Context) (Bound, bool) {
	if b := g.bound.Load(); b != nil {
		return *b, true
	}
	select {
	case <-ctx.Done():
		return BoundContext, true
	case <-g.stop:
		return BoundStopped, true
	default:
	}
	if g.now().Sub(g.start) >= g.opt.Duration {
		return BoundDuration, true
	}
	return "", false
}

// sleep waits d, or less when ctx ends or the run is stopped.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-stop:
	}
}

func (g *Generator) name(phase int32) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wins[phase].name
}
