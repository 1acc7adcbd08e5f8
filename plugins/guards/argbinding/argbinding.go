// Package argbinding is ArgBinding, the second guard of the chain
// (CONTRACT_SPEC §13, step 2; §5.3 step 1): it writes the values the
// contract fixes into the arguments — const always, from whenever the
// expression yields a value (§9), under when ALWAYS or UNIQUE (§5.4), array
// templates index by index where the model left an index empty — and
// records each bound parameter's source as a provenance fact for
// ParamContract and the approval summary. It never rejects: a value it
// cannot bind is left to ParamContract.
//
// The guest does all of it: it parses the contract (memoised per text, see
// envelope.Tool), evaluates the expressions against the state views in the
// envelope it holds, and rewrites the arguments.
package argbinding

import (
	"bytes"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
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
	args, facts, err := Bind(c)
	if err != nil {
		c.Log(err.Error())
	}
	c.Pass(args, facts...)
}

// Bind is step 1 of CONTRACT_SPEC §5.3 on a request: it runs
// contract.Tool.Bind on the arguments (bound, else the model's) with the
// request's state views as the scope. It returns the rewritten arguments and
// one fact per binding — the concrete path written (lines.1.goodsCode), the
// §9 source type, and the from expression or "const", with "@" and the
// evidence id or entity type:id when known — or nil and no facts when
// nothing was bound. A missing contract, or arguments that are not an object
// (ArgPolicy has already rejected those), bind nothing; a contract that does
// not parse binds nothing and is returned as the error.
func Bind(req envelope.Reader) ([]byte, []abi.Fact, error) {
	t, err := envelope.Declared(req)
	if err != nil || t == nil {
		return nil, nil, err
	}
	if !binds(t) {
		return nil, nil, nil // nothing to bind: Bind would find no bindings
	}
	b, err := t.Bind([]byte(envelope.Args(req).Raw), envelope.NewScope(req))
	if err != nil || len(b.Bindings) == 0 {
		return nil, nil, nil
	}
	facts := make([]abi.Fact, len(b.Bindings))
	for i, x := range b.Bindings {
		facts[i] = abi.Fact{Path: x.Path, Source: string(x.Source), Detail: detail(t, x)}
	}
	return bytes.TrimSpace(b.Args), facts, nil
}

func detail(t *contract.Tool, x contract.Binding) string {
	d := "const"
	if a := t.Args[x.Param]; a != nil && a.From != nil {
		d = a.From.Raw
	}
	if x.Ref != "" {
		d += "@" + x.Ref
	}
	return d
}

// binds reports whether some parameter of t has const or from, the only
// parameters Bind binds.
func binds(t *contract.Tool) bool {
	for _, a := range t.Args {
		if a.Const != nil || a.From != nil {
			return true
		}
	}
	return false
}
