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
// where cost bounds the work of the function's instructions outside its
// loops. Inside such a region, and inside each loop's instructions outside
// its nested loops, control only moves forward, so one pass runs each
// instruction at most once; a check charges its region's whole length,
// never a sample of it. A function with loops or bulk ops gets two more
// i32 locals: a counter, which each loop header charges its region and,
// when it goes below zero, settles with the fuel check (prepaying up to
// loopStride passes), and a scratch local, through which memory.fill/copy/
// init and table.fill/copy/init charge their length before they run.
// Before each loop the counter is charged the enclosing region once more,
// for the rest of it after the loop is left. The counter stays in a
// register where the global is a load and a store, and Go's wasm code
// passes a loop header at nearly every branch. Every inserted block is
// closed before the original code resumes, so no branch depth changes.
// Every backward jump in wasm targets a loop, and every call enters a
// function, so a guest cannot run long without reaching a check: the
// refill function is a safepoint where the host can end the call and the
// Go runtime can stop the goroutine for a garbage collection.
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
// a local, function, global or type index past the original module's, so
// that no guest can name the counter or the fuel it did not declare (see
// decoder for the other index spaces). The output is meant to be validated
// by the runtime that compiles it.
package meter
