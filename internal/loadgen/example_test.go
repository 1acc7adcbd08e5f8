package loadgen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/loadgen"
)

// A run split into a steady and a swapping window, measured side by side.
// The fake clock makes the figures exact; a real run leaves Now nil.
func Example() {
	clock := newClock()
	g, _ := loadgen.New(loadgen.Options{Requests: 8, Duration: time.Minute, Phase: "steady", Now: clock.Now})
	r, _ := g.Run(context.Background(), func(_ context.Context, seq int) error {
		d := 2 * time.Millisecond
		if seq >= 4 {
			d = 3 * time.Millisecond
		}
		clock.Advance(d)
		if seq == 3 {
			g.SetPhase("swapping") // as a controller would, between requests
		}
		return nil
	})
	fmt.Println(r.Bound)
	for _, p := range r.Phases {
		fmt.Println(p)
	}
	// Output:
	// requests
	// steady: 4 requests, 0 errors, p50 2ms, p90 2ms, p99 2ms, max 2ms, 500 req/s over 8ms
	// swapping: 4 requests, 0 errors, p50 3ms, p90 3ms, p99 3ms, max 3ms, 333 req/s over 12ms
}
