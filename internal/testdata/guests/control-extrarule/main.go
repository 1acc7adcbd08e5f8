//go:build wasip1

// Command control-extrarule is the first-party control builtin with one more
// finish rule, for the hot-swap tests: a node that holds successful
// evidence of its own must cite at least one item of it in the finish
// output as [ev:<id>]. The refusal reuses ARG_REJECTED (the output argument
// does not meet the tool's rule) with the citation hint as its next step.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// Version is the variant's manifest version, so a swap shows in the history.
const Version = "1.0.0-extrarule"

func init() {
	p := control.New(control.Options{FinishRules: []control.FinishRule{citeOwnEvidence}})
	p.Manifest.Version = Version
	guest.Serve(p)
}

// citeOwnEvidence refuses a finish that cites no evidence while the node has
// a successful call of its own on record.
func citeOwnEvidence(f *control.FinishCheck) *control.Refusal {
	if len(f.Cites) > 0 {
		return nil
	}
	for _, it := range f.Evidence.Items {
		if it.NodeID == f.Node.NodeID && it.Status == abi.OutcomeSuccess && it.BusinessOK {
			detail := "output 须至少引用一条本节点的证据，写作 [ev:<证据ID>]"
			if f.Locale == abi.LocaleEN {
				detail = "output must cite at least one evidence item of this node as [ev:<evidence id>]"
			}
			return &control.Refusal{Code: abi.ArgRejected,
				Reason: abi.ArgRejected.Reason(f.Locale, "tool", control.Finish, "detail", detail),
				Next:   abi.NextCiteEvidence.Text(f.Locale)}
		}
	}
	return nil
}

func main() {}
