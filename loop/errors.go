package loop

import (
	"errors"
	"fmt"
)

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

// ErrProviderUnavailable: an inputs.provider names no skill of the agent;
// the task cannot be planned (CONTRACT_SPEC §16, PROVIDER_UNAVAILABLE).
var ErrProviderUnavailable = errors.New("input provider skill is not available")

// ProviderUnavailableError names the input whose provider is no skill of
// the agent. It wraps ErrProviderUnavailable.
type ProviderUnavailableError struct {
	Skill, Input, Provider string
}

func (e *ProviderUnavailableError) Error() string {
	return fmt.Sprintf("loop: plan: skill %s: inputs.%s.provider %q: %s", e.Skill, e.Input, e.Provider, ErrProviderUnavailable)
}

func (e *ProviderUnavailableError) Unwrap() error { return ErrProviderUnavailable }

// ErrPlatformField: a task's login identity has a field that is not an
// open platform field, or a value that is not JSON (CONTRACT_SPEC §11).
var ErrPlatformField = errors.New("not an open platform field")

// ErrModel: the model call of a turn (or of planning) failed; the error
// wraps the model's own (a *model.ProviderError when the provider
// answered).
var ErrModel = errors.New("model")
