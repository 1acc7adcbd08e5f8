package host

// CompiledModules reports how many compiled modules h holds and how many
// no plugin uses.
func CompiledModules(h *Host) (all, idle int) { return h.compiledModules() }

// KeepIdleModules is keepIdleModules.
const KeepIdleModules = keepIdleModules
