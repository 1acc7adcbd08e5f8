package chain

import "errors"

// Tool adapters wrap these sentinels so the invoker can classify a failure
// (CONTRACT_SPEC §14.4). An unwrapped error is an unknown tool error.

// ErrTimeout: the tool did not answer in time.
var ErrTimeout = errors.New("tool timed out")

// ErrUnreachable: the tool's server could not be reached (nothing was sent).
var ErrUnreachable = errors.New("tool unreachable")

// ErrIO: the connection failed while the call was under way.
var ErrIO = errors.New("tool I/O error")

// ErrRPC: the protocol failed (malformed or unexpected response).
var ErrRPC = errors.New("tool RPC error")

// ErrAuth: the tool's server refused the credentials (HTTP 401 or 403).
// Nothing ran, and a retry would be refused the same way.
var ErrAuth = errors.New("tool authorization refused")

// ErrInvalidParams: the tool refused the arguments at the protocol level.
var ErrInvalidParams = errors.New("tool invalid params")

// ErrPosition is returned by Build for a tenant guard position that names no
// guard of its phase.
var ErrPosition = errors.New("invalid guard position")
