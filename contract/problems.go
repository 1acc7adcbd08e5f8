package contract

import (
	"errors"
	"fmt"
	"strings"
)

// Rule identifies a load rule: "1".."13" are CONTRACT_SPEC §16, "W1".. are
// Warden's extension rules and "P1".. are advisory warnings.
type Rule string

// The load rules.
const (
	RuleJSON           Rule = "1"
	RuleExprPrefix     Rule = "2"
	RuleTarget         Rule = "3"
	RuleDelegatable    Rule = "4"
	RuleToolKey        Rule = "5"
	RuleWriteSuccess   Rule = "6"
	RuleConfirm        Rule = "7"
	RuleVerifyTool     Rule = "8"
	RuleFromConst      Rule = "9"
	RulePlatformField  Rule = "10"
	RuleExtractPath    Rule = "11"
	RuleListFields     Rule = "12"
	RuleEnum           Rule = "13"
	RuleGuardRef       Rule = "W1"
	RuleGuardPhase     Rule = "W2"
	RuleGuardPosition  Rule = "W3"
	RuleGuardFailure   Rule = "W4"
	RuleGuardConfig    Rule = "W5"
	RuleToolTimeout    Rule = "W6"
	RuleRetryOnWrite   Rule = "W7"
	RuleRetryPolicy    Rule = "W8"
	RuleFallback       Rule = "W9"
	WarnPlatformLeaf   Rule = "P1"
	WarnPlatformOutput Rule = "P2"
	WarnMissingSelf    Rule = "P3"
	WarnProviderSelf   Rule = "P4"
)

var ruleSentinel = map[Rule]error{
	RuleJSON:          ErrContractJSON,
	RuleExprPrefix:    ErrExprPrefix,
	RuleTarget:        ErrTargetNotWrite,
	RuleDelegatable:   ErrDelegatableWrite,
	RuleToolKey:       ErrEmptyToolKey,
	RuleWriteSuccess:  ErrWriteNoSuccess,
	RuleConfirm:       ErrConfirmOnRead,
	RuleVerifyTool:    ErrVerifyTool,
	RuleFromConst:     ErrFromAndConst,
	RulePlatformField: ErrPlatformField,
	RuleExtractPath:   ErrExtractPath,
	RuleListFields:    ErrListFields,
	RuleEnum:          ErrEnumValue,
	RuleGuardRef:      ErrGuardRef,
	RuleGuardPhase:    ErrGuardPhase,
	RuleGuardPosition: ErrGuardPosition,
	RuleGuardFailure:  ErrGuardFailure,
	RuleGuardConfig:   ErrGuardConfig,
	RuleToolTimeout:   ErrToolTimeout,
	RuleRetryOnWrite:  ErrRetryOnWrite,
	RuleRetryPolicy:   ErrRetryPolicy,
	RuleFallback:      ErrFallback,
}

// LoadError is one violated load rule of one skill. It unwraps to the rule's
// sentinel (ErrWriteNoSuccess, …), so errors.Is works with either a sentinel
// or another *LoadError: two LoadErrors match when their rule matches and the
// target's non-empty SkillKey and Path match too.
type LoadError struct {
	SkillKey string // skill_key of the failing skill
	Path     string // JSON path inside skill_contract, e.g. tools.create_article.args.title.from
	Rule     Rule   // the violated rule
	Detail   string // what was found, in one line
}

// Error renders "contract: skill <key>: <path>: rule <n>: <sentinel>: <detail>".
func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "contract: skill %q: ", e.SkillKey)
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "rule %s: %v", e.Rule, e.Unwrap())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Message is the problem without the skill and path prefix, for listings.
func (e *LoadError) Message() string {
	if e.Detail == "" {
		return e.Unwrap().Error()
	}
	return e.Unwrap().Error() + ": " + e.Detail
}

// Unwrap returns the rule's sentinel.
func (e *LoadError) Unwrap() error {
	if s, ok := ruleSentinel[e.Rule]; ok {
		return s
	}
	return ErrContractJSON
}

// Is reports whether target is a *LoadError for the same rule (and the same
// skill and path where the target sets them).
func (e *LoadError) Is(target error) bool {
	t, ok := target.(*LoadError)
	if !ok {
		return false
	}
	return t.Rule == e.Rule &&
		(t.SkillKey == "" || t.SkillKey == e.SkillKey) &&
		(t.Path == "" || t.Path == e.Path)
}

// Warning is an advisory finding: the skill still loads.
type Warning struct {
	SkillKey string
	Path     string
	Rule     Rule
	Message  string
}

// String renders the warning like a LoadError, marked as a warning.
func (w Warning) String() string {
	return fmt.Sprintf("contract: skill %q: %s: warning %s: %s", w.SkillKey, w.Path, w.Rule, w.Message)
}

// ValidationError holds every load error of one skill. It unwraps to each
// *LoadError, so errors.Is(err, ErrWriteNoSuccess) finds any of them.
type ValidationError struct {
	SkillKey string
	Problems []*LoadError
}

// Error lists the problems, one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems for errors.Is and errors.As.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// Problems extracts the *LoadError values from an error returned by Parse,
// Load or the loader; it returns nil for nil.
func Problems(err error) []*LoadError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Problems
	}
	var le *LoadError
	if errors.As(err, &le) {
		return []*LoadError{le}
	}
	return nil
}
