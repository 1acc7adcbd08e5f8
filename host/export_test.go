package host

import "context"

// CompiledModules reports how many compiled modules h holds and how many
// no plugin uses.
func CompiledModules(h *Host) (all, idle int) { return h.compiledModules() }

// KeepIdleModules is keepIdleModules.
const KeepIdleModules = keepIdleModules

// UseSliceMemory makes new instances grow their memory in Go slices, as
// wazero's own allocator does (true), or in reserved mappings (false); for
// benchmarks that compare the two. Not safe with calls in flight.
func UseSliceMemory(slice bool) {
	if slice {
		memoryAllocator = nil
	} else {
		memoryAllocator = defaultMemoryAllocator
	}
}

var defaultMemoryAllocator = memoryAllocator

// CrossTenant is how many times an instance bound to one tenant was offered
// to another (always 0: pools hold one tenant's instances).
func CrossTenant(p *Plugin) uint64 { return p.stats.crossTenant.Load() }

// WaitSpares waits for the spares p is starting in the background.
func WaitSpares(p *Plugin) { p.refills.Wait() }

// RefillSpares turns the background start of a plugin's spare on or off;
// for benchmarks that measure a start. Not safe with calls in flight.
func RefillSpares(on bool) { refillSpares = on }

// DropSpare closes p's spare, if it has one.
func DropSpare(p *Plugin) {
	if s := p.takeSpare(); s != nil {
		p.closeInstance(context.Background(), s)
	}
}

// MergeData is mergeData.
func MergeData(bin []byte) []byte { return mergeData(bin) }

// Sleb32 is sleb32.
func Sleb32(b []byte) (int64, int) { return sleb32(b) }
