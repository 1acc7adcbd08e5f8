package host_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// FilterViews keeps only the state views the grant names: not an effect or
// another capability the grant names, not a view it does not.
func TestFilterViews(t *testing.T) {
	t.Parallel()
	state := func() map[string]json.RawMessage {
		return map[string]json.RawMessage{
			string(abi.CapStateNode): json.RawMessage(`{}`), string(abi.CapStateLedger): json.RawMessage(`[]`),
			string(abi.CapEffectLedger): json.RawMessage(`1`), string(abi.CapClock): json.RawMessage(`2`),
			"nodeId": json.RawMessage(`"n1"`),
		}
	}
	tests := []struct {
		name  string
		grant []abi.Capability
		want  []string
	}{
		{"nothing granted", nil, nil},
		{"one view", []abi.Capability{abi.CapStateLedger}, []string{"state.ledger"}},
		{"views, an effect and the clock", []abi.Capability{abi.CapStateNode, abi.CapStateLedger, abi.CapEffectLedger, abi.CapClock},
			[]string{"state.ledger", "state.node"}},
		{"a view not in the state", []abi.Capability{abi.CapStateEvidence}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := state()
			host.FilterViews(s, tt.grant)
			if got := slices.Sorted(maps.Keys(s)); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			for k := range state() {
				if got, want := host.ViewGranted(k, tt.grant), slices.Contains(tt.want, k); got != want {
					t.Errorf("ViewGranted(%s) = %v, want %v", k, got, want)
				}
			}
		})
	}
}
