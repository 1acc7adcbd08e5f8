// Package host loads, sandboxes and calls Warden plugins: guards on business
// tool calls and builtin tools, compiled to WebAssembly.
//
// A plugin is loaded from bytes with an optional sha256 pin, checked at load
// (exports, ABI version, manifest, capabilities, limits, config) and
// pre-warmed, so a bad plugin fails at load and not at its first call.
// Compiled code is shared per module digest through a wazero compilation
// cache (on disk when Options.CacheDir is set). Instances live in a bounded
// pool per (plugin, tenant); an instance is never shared by two goroutines,
// and one that trapped, timed out or ran out of memory is closed, never
// returned to the pool.
//
// Every call has a deadline, enforced by metering the guest's code at load
// (meter.go): a looping guest would otherwise freeze the whole Go process. A plugin gets
// no filesystem, network, environment, clock or randomness: WASI clocks and
// random_get are deterministic stand-ins unless the manifest was granted the
// clock or random capability.
//
// Two loaders sit behind one interface: Warden's direct ABI on wazero (the
// Go SDK's fast path, module "warden") and the extism go-sdk for modules
// built with any extism PDK. The module's imports and exports choose.
//
// A plugin's failure becomes an observation under its failure policy:
// guards fail closed (REJECTED) unless declared fail-open or shadow; builtins
// fail as FAILED.
package host
