package scripted

import "errors"

// ErrInvalidScript is returned by Parse and New for a script that cannot be
// played: an empty turn, a tool call without a name, an unknown key.
var ErrInvalidScript = errors.New("invalid script")

// ErrExhausted is returned by Complete when every turn has been played.
var ErrExhausted = errors.New("script exhausted")

// ErrDiverged is returned by Complete when a turn's expectation does not hold
// for the conversation so far.
var ErrDiverged = errors.New("conversation diverged from the script")

// ErrScriptedFailure is returned by Complete for a turn that scripts a model
// failure (Turn.Fail).
var ErrScriptedFailure = errors.New("scripted model failure")
