// Package chain runs one business tool call through its guards and the
// invoker, in the order of CONTRACT_SPEC §13:
//
//	ArgPolicy → ArgBinding → ParamContract → Fingerprint → WriteGate
//	  → invoke →
//	ResponseContract → WriteGate → Evidence → Fingerprint
//
// with a skill's tenant guards inserted where the skill's contract places
// them. Every guard is a plugin (wasm through the host, or the same plugin
// run natively for tests and benchmarks) behind the Guard interface.
//
// Tenant guards come from a Registry: a tenant installs modules (Install,
// with the capabilities the installer grants), a skill's contract attaches
// them by ref, and Attach resolves and loads them into placements for New —
// or returns the load errors that keep the skill from loading. The chain
// applies each attachment's failure policy itself (see Tenant), so a shadow
// verdict or a failure let through by fail-open stays in the call's Trace;
// every Step names the plugin and generation that served it, and
// Result.Decider the guard whose verdict is the observation.
//
// A before-phase guard either passes — possibly with rewritten arguments and
// provenance facts — or ends the call with an observation (REJECTED,
// DEFERRED, or a SUCCESS that reuses an earlier write's result). The invoker
// calls the tool only when every before guard passed, and classifies what
// happened (TOOL_OBSERVATION §5, CONTRACT_SPEC §14.4). After-phase guards
// then see the result and may replace the observation (a business failure,
// a changed next step); they all run, so evidence and the write ledger are
// settled even for a failed call.
//
// The chain holds no state. State views come in with the Call; effects go
// out with the Result, in the order the guards emitted them, for the caller
// to apply atomically.
package chain
