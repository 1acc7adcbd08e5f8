// Package abi is the wire contract between the Warden host and its WebAssembly
// plugins: the ABI version, the four outcomes of a tool call, the runtime
// error-code registry with its reason and next-step texts, the Observation
// and its factories, the request and verdict envelopes, the effects a plugin
// may ask the host to apply, the plugin manifest, and the names and
// encodings of the host functions and exports (hostfuncs.go).
//
// The package holds names and pure values only. It imports the standard
// library and nothing that touches a runtime or I/O, so the same code builds
// for the host and for GOOS=wasip1 guests.
//
// A plugin reports exactly one result per call through one of the factories
// (Success, Failed, Rejected, Deferred) or, for a guard, Pass. The host
// enforces this with a Recorder: a non-success without a known code, a reason
// and a next step, a second result, or no result at all is a Violation, and
// the host turns it into an observation with PLUGIN_CONTRACT_VIOLATION.
package abi

// Version is the ABI version this package describes. A guest exports the
// version it was built against; the host refuses any other.
const Version = 1
