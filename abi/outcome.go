package abi

import (
	"encoding/json"
	"fmt"
)

// Outcome is the nature of a tool call's result, decided where the result is
// produced. The loop counts progress from the outcome alone.
type Outcome uint8

// The four outcomes of TOOL_OBSERVATION §3. The zero value is not an outcome.
const (
	// OutcomeSuccess: the tool really ran and succeeded (including a reused
	// successful write). Advances: resets the no-progress counter.
	OutcomeSuccess Outcome = iota + 1
	// OutcomeFailed: the tool really ran and failed (timeout, unreachable, business
	// failure). Stalls: counts one no-progress turn.
	OutcomeFailed
	// OutcomeRejected: the call broke a rule and was stopped before running.
	// Stalls: counts one no-progress turn.
	OutcomeRejected
	// OutcomeDeferred: the call is legitimate but a prerequisite step comes first
	// (approval, verification). Neither counts nor resets.
	OutcomeDeferred
)

var outcomeNames = [...]string{OutcomeSuccess: "SUCCESS", OutcomeFailed: "FAILED", OutcomeRejected: "REJECTED", OutcomeDeferred: "DEFERRED"}

// String returns the outcome's wire name, e.g. "SUCCESS".
func (o Outcome) String() string {
	if o.Valid() {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Valid reports whether o is one of the four outcomes.
func (o Outcome) Valid() bool { return o >= OutcomeSuccess && o <= OutcomeDeferred }

// Advances reports whether the outcome resets the no-progress counter.
func (o Outcome) Advances() bool { return o == OutcomeSuccess }

// Stalls reports whether the outcome counts one no-progress turn.
func (o Outcome) Stalls() bool { return o == OutcomeFailed || o == OutcomeRejected }

// ParseOutcome returns the outcome named s (case-sensitive).
func ParseOutcome(s string) (Outcome, error) {
	for o := OutcomeSuccess; o <= OutcomeDeferred; o++ {
		if outcomeNames[o] == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("abi: outcome %q: %w", s, ErrUnknownOutcome)
}

// MarshalJSON encodes the outcome by name.
func (o Outcome) MarshalJSON() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("abi: marshal %v: %w", o, ErrUnknownOutcome)
	}
	return json.Marshal(outcomeNames[o])
}

// UnmarshalJSON decodes an outcome name.
func (o *Outcome) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("abi: outcome: %w", err)
	}
	v, err := ParseOutcome(s)
	if err != nil {
		return err
	}
	*o = v
	return nil
}
