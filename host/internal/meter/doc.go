// Package meter rewrites a wasm module so that it counts down a budget of
// fuel and asks the host for more when it runs out.
//
// Instrument adds one mutable i64 global (the fuel) and one imported
// function (ImportModule.ImportName, type () -> i64). At the entry of every
// defined function it inserts the fuel check
//
//	global.get fuel; i64.const cost; i64.sub; global.set fuel
//	global.get fuel; i64.const 0; i64.lt_s
//	if; call refill; global.set fuel; end
//
// where cost is the length of the straight-line code the check starts (the
// instructions up to the next one that branches, calls, or opens or closes
// a block). A function with loops gets one more i32 local, a counter: each
// loop header counts it down and runs the fuel check, charged for
// loopStride passes, when it goes below zero (the first pass included), then
// resets it. The counter stays in a register where the global is a load
// and a store, and Go's wasm code passes a loop header at nearly every
// branch. Every inserted block is closed before the original code resumes,
// so no branch depth changes. Every backward jump in wasm targets a loop, and
// every call enters a function, so a guest cannot run long without reaching
// a check: the refill function is a safepoint where the host can end the
// call and the Go runtime can stop the goroutine for a garbage collection.
//
// Adding an import shifts the index of every defined function by one: the
// rewriter fixes call, ref.func, exports, the start function, element
// segments, constant expressions and the function, local and label names
// of the "name" section. DWARF sections are dropped (code offsets move).
//
// The rewriter decodes every instruction of the MVP, sign extension,
// saturating truncation, bulk memory, reference types, multi-value, SIMD
// and threads. It refuses, with ErrUnsupported, exception handling, tail
// calls, typed function references and GC, which wazero does not run; and,
// with ErrMalformed, input it cannot decode. It also refuses references to
// a global or type index past the original module's, so that no guest can
// name the fuel it did not declare. The output is meant to be validated by
// the runtime that compiles it.
package meter
