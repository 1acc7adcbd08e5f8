package host

import (
	"sync"
	"time"
)

// StopLateness records, per plugin ref, how long after the call's deadline
// a host function stopped each call, until the returned func is called.
func StopLateness() (late func(plugin string) []time.Duration, stop func()) {
	var mu sync.Mutex
	seen := map[string][]time.Duration{}
	f := func(plugin string, d time.Duration) {
		mu.Lock()
		seen[plugin] = append(seen[plugin], d)
		mu.Unlock()
	}
	stopHook.Store(&f)
	return func(plugin string) []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Duration(nil), seen[plugin]...)
		}, func() {
			stopHook.Store(nil)
		}
}

// BoundCallStack turns the call-stack instrumentation of modules compiled
// from now on on or off, for benchmarks that measure its cost. Not safe
// while modules are being compiled.
func BoundCallStack(on bool) { stackBound = on }

// Instrument is boundCallStack with the budget of a 64 MiB plugin.
func Instrument(bin []byte) ([]byte, error) { return boundCallStack(bin, callStackBudget(1024)) }
