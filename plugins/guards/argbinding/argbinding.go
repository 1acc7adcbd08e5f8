// Package argbinding is ArgBinding, the second guard of the chain
// (CONTRACT_SPEC §13, step 2; §5.3 step 1): it writes the values the
// contract fixes into the arguments — const always, from whenever the
// expression yields a value (§9), under when ALWAYS or UNIQUE (§5.4), array
// templates index by index where the model left an index empty — and
// records each bound parameter's source as a provenance fact for
// ParamContract and the approval summary. It never rejects: a value it
// cannot bind is left to ParamContract.
//
// Parsing the contract and evaluating expressions against the state views
// is library work; the host service contract.bind does it natively and the
// guest only passes the result on.
package argbinding

import (
	"bytes"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the ArgBinding guard. Its state views are what from
// expressions read: the node (inputs, outputs, shared, session, platform),
// the entity index (prior.*) and the evidence (evidence.*).
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "argbinding", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description:  "binds contract parameters from const and from expressions and records their sources",
		Phases:       []abi.Phase{abi.PhaseBefore},
		Capabilities: []abi.Capability{abi.CapStateNode, abi.CapStateEntities, abi.CapStateEvidence},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	if !c.Has(abi.FieldContract + ".args") {
		c.Pass(nil)
		return
	}
	out, err := c.Service("contract.bind", nil)
	if err != nil {
		c.Log(err.Error())
	}
	i := bytes.IndexByte(out, 0)
	if err != nil || i < 0 {
		c.Pass(nil)
		return
	}
	var facts []abi.Fact
	for rec := range bytes.SplitSeq(out[i+1:], []byte{0x1e}) {
		f := bytes.SplitN(rec, []byte{0x1f}, 3)
		if len(f) == 3 {
			facts = append(facts, abi.Fact{Path: string(f[0]), Source: string(f[1]), Detail: string(f[2])})
		}
	}
	c.Pass(out[:i], facts...)
}
