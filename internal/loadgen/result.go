package loadgen

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Result is what a run measured.
type Result struct {
	// Bound is what ended the run.
	Bound Bound
	// Elapsed is the run's wall time, until its last request returned.
	Elapsed time.Duration
	// Total covers every request of the run.
	Total Stats
	// Phases has one entry per phase the run was in, in the order they
	// were first entered; a phase entered but where no request started has
	// Requests 0.
	Phases []Stats
	// Failures are the first KeptFailures failures of each worker, by
	// worker then sequence.
	Failures []Failure

	// latencies and errs hold each phase's sorted latencies and error
	// count, by index in Phases, for Merge.
	latencies [][]time.Duration
	errs      []int
}

// Merge returns the stats of the named phases' requests taken together,
// under the name as, as if they had been one phase; phases the run did not
// have add nothing.
func (r Result) Merge(as string, phases ...string) Stats {
	var lat []time.Duration
	errs := 0
	var elapsed time.Duration
	for i, s := range r.Phases {
		if slices.Contains(phases, s.Phase) {
			lat = append(lat, r.latencies[i]...)
			errs += r.errs[i]
			elapsed += s.Elapsed
		}
	}
	return summarise(as, lat, errs, elapsed)
}

// Phase returns the stats of the named phase, and whether the run had it.
func (r Result) Phase(name string) (Stats, bool) {
	for _, s := range r.Phases {
		if s.Phase == name {
			return s, true
		}
	}
	return Stats{Phase: name}, false
}

// Stats summarise the requests of a phase or of a whole run.
type Stats struct {
	Phase    string
	Requests int
	// Errors counts the failed requests among Requests.
	Errors int
	// Latency percentiles (nearest rank) and maximum, over every request.
	P50, P90, P99, Max time.Duration
	// Elapsed is the wall time the phase was current while the run ran.
	Elapsed time.Duration
}

// Throughput is requests per second of Elapsed; 0 when Elapsed is 0.
func (s Stats) Throughput() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Requests) / s.Elapsed.Seconds()
}

// String is a one-line summary for logs.
func (s Stats) String() string {
	return fmt.Sprintf("%s: %d requests, %d errors, p50 %s, p90 %s, p99 %s, max %s, %.0f req/s over %s",
		s.Phase, s.Requests, s.Errors, s.P50, s.P90, s.P99, s.Max, s.Throughput(), s.Elapsed)
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted, an ascending slice: the smallest value that at least p% of the
// values do not exceed. It is exact for whole percentiles, and 0 for an
// empty slice; p is clamped into (0, 100].
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// summarise computes the stats of latencies (sorted in place).
func summarise(phase string, lat []time.Duration, errs int, elapsed time.Duration) Stats {
	slices.Sort(lat)
	s := Stats{Phase: phase, Requests: len(lat), Errors: errs, Elapsed: elapsed,
		P50: Percentile(lat, 50), P90: Percentile(lat, 90), P99: Percentile(lat, 99)}
	if len(lat) > 0 {
		s.Max = lat[len(lat)-1]
	}
	return s
}

func (g *Generator) result(elapsed time.Duration, wins []window, samples [][]sample, failures [][]Failure) Result {
	r := Result{Elapsed: elapsed}
	if b := g.bound.Load(); b != nil {
		r.Bound = *b
	}
	var all []time.Duration
	allErrs := 0
	per := make([][]time.Duration, len(wins))
	errs := make([]int, len(wins))
	for _, ws := range samples {
		for _, s := range ws {
			all = append(all, s.latency)
			per[s.phase] = append(per[s.phase], s.latency)
			if s.failed {
				allErrs++
				errs[s.phase]++
			}
		}
	}
	r.Total = summarise("total", all, allErrs, elapsed)
	for i, w := range wins {
		r.Phases = append(r.Phases, summarise(w.name, per[i], errs[i], w.elapsed))
	}
	r.latencies, r.errs = per, errs
	for _, f := range failures {
		r.Failures = append(r.Failures, f...)
	}
	return r
}
