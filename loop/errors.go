package loop

import "errors"

// ErrUnknownSkill: a node names a skill the runner was not given.
var ErrUnknownSkill = errors.New("unknown skill")

// ErrNotSuspended: a resume names a node that is not suspended that way.
var ErrNotSuspended = errors.New("node is not suspended that way")

// ErrInvalidConfig: a Config limit is missing or out of range.
var ErrInvalidConfig = errors.New("invalid loop config")

// ErrUnknownDecision: an approval decision other than CONFIRM, REJECT, CANCEL.
var ErrUnknownDecision = errors.New("unknown approval decision")

// ErrNoVerifyTool: a write waiting for VERIFY has no verify tool to settle
// it; only the user's answer can.
var ErrNoVerifyTool = errors.New("the write has no verify tool")

// ErrVerifyTooEarly: a write was found not done before its call could
// have finished; nothing is settled (see VerifyTooEarlyError).
var ErrVerifyTooEarly = errors.New("verified not done before the write could have finished")

// ErrModel: the model call of a turn (or of planning) failed; the error
// wraps the model's own (a *model.ProviderError when the provider
// answered).
var ErrModel = errors.New("model")
