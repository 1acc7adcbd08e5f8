package contract

import "errors"

// Load-rule sentinels. Every *LoadError unwraps to exactly one of them; the
// comment names the rule of CONTRACT_SPEC §16 (or Warden's W rule) it stands for.
var (
	// ErrContractJSON is rule 1: skill_contract is empty, not JSON, or a value has the wrong JSON type.
	ErrContractJSON = errors.New("skill_contract is empty or not valid JSON")
	// ErrExprPrefix is rule 2: a from expression has an unknown or misplaced prefix.
	ErrExprPrefix = errors.New("invalid expression prefix")
	// ErrTargetNotWrite is rule 3: target is not a WRITE tool of tools.
	ErrTargetNotWrite = errors.New("target is not a WRITE tool")
	// ErrDelegatableWrite is rule 4: a delegatable skill has a WRITE tool.
	ErrDelegatableWrite = errors.New("delegatable skill has a WRITE tool")
	// ErrEmptyToolKey is rule 5: a key of tools is empty.
	ErrEmptyToolKey = errors.New("empty tool key")
	// ErrWriteNoSuccess is rule 6: a WRITE tool has no success condition.
	ErrWriteNoSuccess = errors.New("WRITE tool without success")
	// ErrConfirmOnRead is rule 7: confirm: true on a tool that is not WRITE.
	ErrConfirmOnRead = errors.New("confirm: true on a non-WRITE tool")
	// ErrVerifyTool is rule 8: verify.tool is empty, not in tools, or not NONE.
	ErrVerifyTool = errors.New("invalid verify.tool")
	// ErrFromAndConst is rule 9: a parameter has both from and const.
	ErrFromAndConst = errors.New("parameter has both from and const")
	// ErrPlatformField is rule 10: platform.<field> names a hidden or unknown field.
	ErrPlatformField = errors.New("platform field is not open")
	// ErrExtractPath is rule 11: an extracts[].path is empty.
	ErrExtractPath = errors.New("extract without path")
	// ErrListFields is rule 12: a LIST output has no fields.
	ErrListFields = errors.New("LIST output without fields")
	// ErrEnumValue is rule 13: an enum attribute has a value outside its set (case-sensitive).
	ErrEnumValue = errors.New("invalid enum value")

	// ErrGuardRef is rule W1: a guards[].ref is neither name@version nor sha256:<64 hex>.
	ErrGuardRef = errors.New("invalid guard ref")
	// ErrGuardPhase is rule W2: a guards[].phase is not before or after.
	ErrGuardPhase = errors.New("invalid guard phase")
	// ErrGuardPosition is rule W3: a guards[].position is malformed or anchors on a guard of the other phase.
	ErrGuardPosition = errors.New("invalid guard position")
	// ErrGuardFailure is rule W4: a guards[].failure is not closed, open or shadow.
	ErrGuardFailure = errors.New("invalid guard failure policy")
	// ErrGuardConfig is rule W5: a guards[].config is not a JSON object.
	ErrGuardConfig = errors.New("guard config is not an object")
	// ErrToolTimeout is rule W6: a tool's timeoutMs is out of range.
	ErrToolTimeout = errors.New("invalid timeoutMs")
	// ErrRetryOnWrite is rule W7: a WRITE tool declares retry.
	ErrRetryOnWrite = errors.New("retry on a WRITE tool")
	// ErrRetryPolicy is rule W8: retry.maxAttempts or retry.backoff is out of range.
	ErrRetryPolicy = errors.New("invalid retry policy")
	// ErrFallback is rule W9: fallback is not another read tool of the contract.
	ErrFallback = errors.New("invalid fallback tool")
)

// Errors outside load validation.
var (
	// ErrNoSkills means an agent has no loadable skill left, so planning fails.
	ErrNoSkills = errors.New("agent has no loadable skill")
	// ErrAgentNotFound means the store has no ACTIVE agent_profile with that agent_code.
	ErrAgentNotFound = errors.New("agent not found")
	// ErrStore means the skill store could not be read or decoded.
	ErrStore = errors.New("skill store unreadable")
	// ErrArgsNotObject means tool arguments are not a JSON object.
	ErrArgsNotObject = errors.New("arguments are not a JSON object")
	// ErrBadParamPath means a parameter path is malformed.
	ErrBadParamPath = errors.New("malformed parameter path")
)
