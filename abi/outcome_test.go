package abi_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// TOOL_OBSERVATION §3: SUCCESS advances; FAILED and REJECTED stall;
// DEFERRED neither counts nor resets.
func TestOutcomeProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		outcome  abi.Outcome
		name     string
		advances bool
		stalls   bool
	}{
		{abi.OutcomeSuccess, "SUCCESS", true, false},
		{abi.OutcomeFailed, "FAILED", false, true},
		{abi.OutcomeRejected, "REJECTED", false, true},
		{abi.OutcomeDeferred, "DEFERRED", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !tt.outcome.Valid() {
				t.Fatalf("%v.Valid() = false", tt.outcome)
			}
			if got := tt.outcome.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.outcome.Advances(); got != tt.advances {
				t.Errorf("Advances() = %v, want %v", got, tt.advances)
			}
			if got := tt.outcome.Stalls(); got != tt.stalls {
				t.Errorf("Stalls() = %v, want %v", got, tt.stalls)
			}
			got, err := abi.ParseOutcome(tt.name)
			if err != nil || got != tt.outcome {
				t.Errorf("ParseOutcome(%q) = %v, %v; want %v, nil", tt.name, got, err, tt.outcome)
			}
			b, err := json.Marshal(tt.outcome)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if want := `"` + tt.name + `"`; string(b) != want {
				t.Errorf("Marshal = %s, want %s", b, want)
			}
			var back abi.Outcome
			if err := json.Unmarshal(b, &back); err != nil || back != tt.outcome {
				t.Errorf("Unmarshal(%s) = %v, %v; want %v, nil", b, back, err, tt.outcome)
			}
		})
	}
}

func TestOutcomeInvalidValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		outcome abi.Outcome
		str     string
	}{
		{"zero", 0, "Outcome(0)"},
		{"one past deferred", 5, "Outcome(5)"},
		{"max", 255, "Outcome(255)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.outcome.Valid() {
				t.Errorf("Valid() = true")
			}
			if tt.outcome.Advances() || tt.outcome.Stalls() {
				t.Errorf("Advances/Stalls = %v/%v, want false/false", tt.outcome.Advances(), tt.outcome.Stalls())
			}
			if got := tt.outcome.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			_, err := json.Marshal(tt.outcome)
			if !errors.Is(err, abi.ErrUnknownOutcome) {
				t.Fatalf("Marshal error = %v, want ErrUnknownOutcome", err)
			}
			want := "json: error calling MarshalJSON for type abi.Outcome: abi: marshal " + tt.str + ": unknown outcome"
			if err.Error() != want {
				t.Errorf("Marshal error = %q, want %q", err, want)
			}
		})
	}
}

func TestParseOutcomeInvalidNames(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "success", "Success", " SUCCESS", "SUCCESS ", "UNKNOWN", "Outcome(0)", "0", "1"} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			got, err := abi.ParseOutcome(s)
			if !errors.Is(err, abi.ErrUnknownOutcome) {
				t.Fatalf("ParseOutcome(%q) error = %v, want ErrUnknownOutcome", s, err)
			}
			if want := `abi: outcome "` + s + `": unknown outcome`; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
			if got != 0 {
				t.Errorf("ParseOutcome(%q) = %v, want 0", s, got)
			}
		})
	}
}

func TestOutcomeUnmarshalInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       string
		sentinel error
		msg      string
	}{
		{"unknown name", `"NOPE"`, abi.ErrUnknownOutcome, `abi: outcome "NOPE": unknown outcome`},
		{"lower case", `"failed"`, abi.ErrUnknownOutcome, `abi: outcome "failed": unknown outcome`},
		{"empty string", `""`, abi.ErrUnknownOutcome, `abi: outcome "": unknown outcome`},
		{"number", `2`, nil, "abi: outcome: json: cannot unmarshal number into Go value of type string"},
		{"object", `{}`, nil, "abi: outcome: json: cannot unmarshal object into Go value of type string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := abi.OutcomeDeferred
			err := json.Unmarshal([]byte(tt.in), &o)
			if err == nil {
				t.Fatalf("Unmarshal(%s) succeeded with %v", tt.in, o)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error = %v, want %v", err, tt.sentinel)
			}
			if err.Error() != tt.msg {
				t.Errorf("error = %q, want %q", err, tt.msg)
			}
			if o != abi.OutcomeDeferred {
				t.Errorf("failed Unmarshal changed the value to %v", o)
			}
		})
	}
}
