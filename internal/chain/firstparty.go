package chain

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
)

// The first-party guards in chain order (CONTRACT_SPEC §13). WriteGate and
// Fingerprint run in both phases: before the call they gate it; after it
// they settle the write ledger and record the call.
var (
	FirstPartyBefore = []string{"ArgPolicy", "ArgBinding", "ParamContract", "Fingerprint", "WriteGate"}
	FirstPartyAfter  = []string{"ResponseContract", "WriteGate", "Evidence", "Fingerprint"}
)

// PluginDir is the directory under plugins/guards/ that builds a
// first-party guard ("WriteGate" → "writegate").
func PluginDir(guard string) string { return strings.ToLower(guard) }

// New assembles a skill's chain: the first-party guards by name (each must be
// present), the skill's tenant guards placed around them, and the invoker.
func New(firstParty map[string]Guard, tenant []Placement, inv *Invoker) (*Chain, error) {
	pick := func(names []string) ([]Guard, error) {
		out := make([]Guard, 0, len(names))
		for _, n := range names {
			g, ok := firstParty[n]
			if !ok {
				return nil, fmt.Errorf("chain: first-party guard %s is not loaded", n)
			}
			out = append(out, g)
		}
		return out, nil
	}
	before, err := pick(FirstPartyBefore)
	if err != nil {
		return nil, err
	}
	after, err := pick(FirstPartyAfter)
	if err != nil {
		return nil, err
	}
	if before, err = Insert(before, abi.PhaseBefore, tenant); err != nil {
		return nil, err
	}
	if after, err = Insert(after, abi.PhaseAfter, tenant); err != nil {
		return nil, err
	}
	return &Chain{Before: before, After: after, Invoker: inv}, nil
}
