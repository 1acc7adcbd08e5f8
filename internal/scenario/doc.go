// Package scenario runs a scenario file end to end: a skill (or several),
// business tools (the example MCP server as a child process, or scripted
// tools with faults), a scripted model, a scripted user who answers
// follow-ups and approvals, and expectations on the trace and the tools.
//
// A scenario builds the real thing — the state store, the first-party guard
// chain (wasm through the host by default, in-process with Options.Native),
// the builtins, the catalog and the loop — and drives one node through its
// suspensions. Every expectation that does not hold is reported, not just
// the first. The file format is documented in docs/SCENARIOS.md.
package scenario
