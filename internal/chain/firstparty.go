package chain

import (
	"fmt"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins"
)

// The first-party guards in chain order (CONTRACT_SPEC §13), as the
// contract defines it (contract.FirstPartyGuards). WriteGate and
// Fingerprint run in both phases: before the call they gate it; after it
// they settle the write ledger and record the call.
var (
	FirstPartyBefore = contract.FirstPartyGuards[contract.PhaseBefore]
	FirstPartyAfter  = contract.FirstPartyGuards[contract.PhaseAfter]
)

// NativeGuards are the first-party guards (package plugins) in-process, by
// chain position name, each run with opts.
func NativeGuards(opts ...guest.NativeOption) map[string]Guard {
	out := map[string]Guard{}
	for _, p := range plugins.Guards() {
		out[p.Name] = Native(p.Name, p.Plugin, nil, opts...)
	}
	return out
}

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
