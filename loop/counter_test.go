package loop

import (
	"testing"

	"github.com/agentwarden/warden/abi"
)

// TestCounter has one case per rule of TOOL_OBSERVATION §6.
func TestCounter(t *testing.T) {
	t.Parallel()
	type call struct {
		outcome        abi.Outcome
		exited         bool
		finishRejected bool
	}
	tests := []struct {
		name   string
		stalls int // before
		calls  []call
		text   bool // a text-only turn instead of calls
		steps  []Step
		after  int
	}{
		{"a control builtin that exits ends the loop", 2, []call{{abi.OutcomeSuccess, true, false}}, false, []Step{StepExit}, 2},
		{"a suspension exits even before resetting", 3, []call{{abi.OutcomeSuccess, true, false}}, false, []Step{StepExit}, 3},
		{"a rejected finish counts one and ends the wave", 1, []call{{abi.OutcomeRejected, false, true}}, false, []Step{StepNextTurn}, 2},
		{"a finish refused as FAILED counts once", 0, []call{{abi.OutcomeFailed, false, true}}, false, []Step{StepNextTurn}, 1},
		{"FAILED stalls and ends the wave", 0, []call{{abi.OutcomeFailed, false, false}}, false, []Step{StepNextTurn}, 1},
		{"REJECTED stalls and ends the wave", 4, []call{{abi.OutcomeRejected, false, false}}, false, []Step{StepNextTurn}, 5},
		{"DEFERRED neither counts nor resets, but ends the wave", 3, []call{{abi.OutcomeDeferred, false, false}}, false, []Step{StepNextTurn}, 3},
		{"SUCCESS resets and goes on", 4, []call{{abi.OutcomeSuccess, false, false}}, false, []Step{StepContinue}, 0},
		{"SUCCESS then a stall in one wave", 2, []call{{abi.OutcomeSuccess, false, false}, {abi.OutcomeRejected, false, false}}, false, []Step{StepContinue, StepNextTurn}, 1},
		{"a text-only turn counts one", 1, nil, true, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Counter{Limit: 5, MaxRounds: 20, Stalls: tt.stalls}
			if tt.text {
				c.TextOnly()
			}
			for i, cl := range tt.calls {
				if got := c.AfterCall(cl.outcome, cl.exited, cl.finishRejected); got != tt.steps[i] {
					t.Fatalf("call %d: step %v, want %v", i, got, tt.steps[i])
				}
			}
			if c.Stalls != tt.after {
				t.Fatalf("stalls %d, want %d", c.Stalls, tt.after)
			}
		})
	}
}

func TestCounterLimits(t *testing.T) {
	t.Parallel()
	c := Counter{Limit: DefaultNoProgressLimit, MaxRounds: 3}
	for i := 0; i < DefaultNoProgressLimit-1; i++ {
		c.AfterCall(abi.OutcomeRejected, false, false)
		if c.Exhausted() {
			t.Fatalf("exhausted after %d stalls", i+1)
		}
	}
	c.AfterCall(abi.OutcomeDeferred, false, false)
	if c.Exhausted() {
		t.Fatal("DEFERRED exhausted the counter")
	}
	c.TextOnly()
	if !c.Exhausted() || c.Stalls != 5 {
		t.Fatalf("not exhausted at %d stalls", c.Stalls)
	}
	for i := 0; i < 3; i++ {
		if !c.Turn() {
			t.Fatalf("turn %d refused", i+1)
		}
	}
	if c.Turn() || c.Rounds != 3 {
		t.Fatalf("a fourth round of three: rounds %d", c.Rounds)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	d := DefaultConfig()
	if d.NoProgressLimit != 5 || d.MaxRounds != 20 || d.DelegateMaxDepth != 2 || d.ReconfirmAfter.Hours() != 24 || d.Validate() != nil {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.NoProgressLimit = 0 }, func(c *Config) { c.MaxRounds = 0 },
		func(c *Config) { c.DelegateMaxDepth = -1 }, func(c *Config) { c.ReconfirmAfter = 0 },
	} {
		c := DefaultConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Fatalf("accepted %+v", c)
		}
	}
}
