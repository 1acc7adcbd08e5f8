// Package scripted is a [model.Model] that replays a fixed list of turns, so
// that scenarios and tests run the real loop, guards and tools with a model
// whose every answer is known in advance.
//
// A script is a list of [Turn] values, usually loaded with [Parse] from the
// "model" section of a scenario file (JSON, or YAML converted to JSON):
//
//	[
//	  {"tool_calls": [{"name": "query_site", "arguments": {"space": "s1"}}]},
//	  {"expect": {"tool": "query_site", "outcome": "SUCCESS"},
//	   "tool_calls": [{"name": "create_site", "arguments": "{\"name\": \"Shop\""}]},
//	  {"expect": {"code": "ARGS_INVALID_JSON"}, "text": "Done."}
//	]
//
// Each Complete returns the next turn. Arguments are raw text: a JSON string
// is used as is (so a script can hand the guards invalid JSON), any other
// JSON value is used as its JSON text.
//
// Tool call ids are deterministic: "call_<turn>_<n>", both counted from 1, so
// a trace is identical on every run.
//
// # Expectations
//
// A turn may carry an [Expect] on the last tool message of the conversation
// (the latest observation). When the conversation does not match, Complete
// returns an error wrapping [ErrDiverged] that names the turn, what the script
// expected and what it saw: a script written for one course of events must
// not silently keep playing on another.
//
// The loop writes an observation's plain message as the tool message
// (TOOL_OBSERVATION §6: "原因。下一步：…"), so outcome and code are not in
// the text. A host that runs the loop sets an [Observer] with
// [Model.SetObserver]; Expect.Outcome and Expect.Code then match what it
// reports for the last tool message. Without an observer they are read from
// the top-level "outcome", "code" and "wire" fields of the message's JSON,
// for conversations recorded by hosts that send JSON.
//
// When the script has no turn left, Complete returns [ErrExhausted].
package scripted
