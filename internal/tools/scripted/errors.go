package scripted

import "errors"

// ErrUnknownTool: the call names no tool of the Server. It also wraps
// chain.ErrInvalidParams, as MCP reports an unknown tool with -32602.
var ErrUnknownTool = errors.New("scripted: unknown tool")

// ErrUnknown is the cause of a FaultError without Err: a failure no
// sentinel classifies, which the invoker treats as an unknown tool error.
var ErrUnknown = errors.New("scripted: injected unknown error")
