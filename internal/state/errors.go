package state

import "errors"

// ErrNotFound: no session, task or node with that id.
var ErrNotFound = errors.New("not found")

// ErrExists: a task or node with that id already exists.
var ErrExists = errors.New("already exists")

// ErrUnknownEffect: an effect kind the store does not apply.
var ErrUnknownEffect = errors.New("unknown effect")

// ErrInvalidEffect: an effect whose payload is malformed or breaks a rule
// of the state it applies to.
var ErrInvalidEffect = errors.New("invalid effect")

// ErrNodeNotRunning: effects were applied to a node that is not RUNNING.
var ErrNodeNotRunning = errors.New("node is not running")

// ErrNotSuspended: a resume names a node that is not suspended as asked.
var ErrNotSuspended = errors.New("node is not suspended that way")

// ErrNotGated: an approval names a node without a held write.
var ErrNotGated = errors.New("no write is held for approval")

// ErrDigestMismatch: the arguments of the held write are not the ones the
// user was asked to confirm.
var ErrDigestMismatch = errors.New("approved arguments changed")

// ErrNotUncertain: a verdict names a write whose outcome is not unknown.
var ErrNotUncertain = errors.New("write outcome is not unknown")
