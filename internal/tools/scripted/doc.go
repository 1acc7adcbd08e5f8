// Package scripted provides business tools that run in memory with faults
// injected per tool and per attempt, so a test or scenario can say "time out
// on the first call, succeed on the second" and then assert what the loop
// did: every call is recorded, and a small State lets a read see what a
// write (even a write that "timed out") changed.
//
// A Server satisfies tools.Provider with the same contract as tools/mcp:
// the tool's own failure is a chain.Response with IsError; a failed call is
// an error wrapping a chain sentinel.
package scripted
