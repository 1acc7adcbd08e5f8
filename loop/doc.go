// Package loop runs a node of a task as a ReAct loop with a model
// (TOOL_OBSERVATION §6), and suspends and resumes it (CONTRACT_SPEC §12,
// §14.1).
//
// Each model turn is a wave of tool calls. Business tools run through the
// skill's guard chain (loop/chain), builtins through their plugins
// (loop/catalog decides which are offered); either way a call ends as one
// abi.Observation, its message becomes the call's tool message, and its
// effects are applied to the node's state (loop/state) atomically. The
// loop counts progress from the outcome alone, in a Counter: it knows no
// error code and no scenario.
//
// A node leaves the loop when a control builtin ends or suspends it, when
// the no-progress limit or the round limit is reached, or when it
// delegates. A suspended node is resumed with AnswerFollowUp, Approve or
// AnswerVerify. A write whose outcome is unknown is verified (or asked of
// the user) before the node's next turn.
//
// RunTask runs one user turn as a task graph: planned by the model (or a
// single node, or the fallback), provider pre-nodes inserted, inputs bound
// when a node starts, delegated pre-nodes run before their delegator;
// ResumeTask goes on after a suspended node was resumed.
package loop
