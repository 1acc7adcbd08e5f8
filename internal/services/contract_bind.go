package services

import (
	"bytes"

	"github.com/agentwarden/warden/contract"
)

func init() {
	Register("contract.bind", ctBind)
}

// ctBind is step 1 of CONTRACT_SPEC §5.3 for ArgBinding: it parses the
// request's tool contract (cached by content hash), builds a
// contract.Scope from the request's state views and runs contract.Tool.Bind
// on the arguments (bound, else the model's). in is ignored.
//
// The answer needs no JSON parser in the guest. It is empty when nothing
// was bound; otherwise the rewritten arguments, a NUL byte (which valid
// JSON never holds raw), then one record per binding separated by '\x1e',
// each "path\x1fsource\x1fdetail": the concrete path written
// (lines.1.goodsCode), the §9 source type, and the from expression or
// "const", with "@" and the evidence id or entity type:id when known.
//
// A missing or unparsable contract, or arguments that are not an object
// (ArgPolicy has already rejected those), bind nothing.
func ctBind(req, _ []byte) ([]byte, error) {
	t, err := ctTool(req)
	if err != nil || t == nil {
		return nil, nil
	}
	b, err := t.Bind([]byte(ctArgs(req).Raw), newCtScope(req))
	if err != nil || len(b.Bindings) == 0 {
		return nil, nil
	}
	out := bytes.TrimSpace(b.Args)
	out = append(out[:len(out):len(out)], 0)
	for i, x := range b.Bindings {
		if i > 0 {
			out = append(out, 0x1e)
		}
		out = append(out, x.Path...)
		out = append(out, 0x1f)
		out = append(out, x.Source...)
		out = append(out, 0x1f)
		out = append(out, ctBindingDetail(t, x)...)
	}
	return out, nil
}

func ctBindingDetail(t *contract.Tool, x contract.Binding) string {
	d := "const"
	if a := t.Args[x.Param]; a != nil && a.From != nil {
		d = a.From.Raw
	}
	if x.Ref != "" {
		d += "@" + x.Ref
	}
	return d
}
