package loop

import "github.com/agentwarden/warden/abi"

// Step is what the loop does after one tool call.
type Step int

// Steps.
const (
	// StepContinue: go on with the next call of the wave.
	StepContinue Step = iota
	// StepNextTurn: skip the rest of the wave and ask the model again.
	StepNextTurn
	// StepExit: leave the loop; a control builtin ended or suspended the node.
	StepExit
)

func (s Step) String() string {
	switch s {
	case StepContinue:
		return "continue"
	case StepNextTurn:
		return "next-turn"
	case StepExit:
		return "exit"
	}
	return "step?"
}

// Counter counts a node's progress exactly as TOOL_OBSERVATION §6 says,
// from outcomes alone. It is a pure value: the runner feeds it what
// happened and persists Stalls and Rounds across suspensions.
type Counter struct {
	// Limit is the no-progress limit; MaxRounds the round limit.
	Limit     int
	MaxRounds int
	// Stalls counts consecutive no-progress turns; Rounds model turns.
	Stalls int
	Rounds int
}

// Turn starts a model turn. It returns false when the node has used all
// its rounds and must fail instead.
func (c *Counter) Turn() bool {
	if c.Rounds >= c.MaxRounds {
		return false
	}
	c.Rounds++
	return true
}

// AfterCall applies §6 to one tool call, in its order:
//
//  1. the node was exited by a control builtin → StepExit;
//  2. builtin_node_finish was refused → one no-progress turn, StepNextTurn;
//  3. the outcome stalls (FAILED, REJECTED) → one no-progress turn, StepNextTurn;
//  4. any other non-success (DEFERRED) → StepNextTurn, neither counted nor reset;
//  5. the outcome advances (SUCCESS) → reset, StepContinue.
//
// A stalling call ends the wave, so a turn counts at most once.
func (c *Counter) AfterCall(o abi.Outcome, exited, finishRejected bool) Step {
	switch {
	case exited:
		return StepExit
	case finishRejected, o.Stalls():
		c.Stalls++
		return StepNextTurn
	case o != abi.OutcomeSuccess:
		return StepNextTurn
	}
	if o.Advances() {
		c.Stalls = 0
	}
	return StepContinue
}

// TextOnly counts a turn in which the model called no tool.
func (c *Counter) TextOnly() { c.Stalls++ }

// Exhausted reports whether the no-progress limit is reached: the node
// fails.
func (c *Counter) Exhausted() bool { return c.Stalls >= c.Limit }
