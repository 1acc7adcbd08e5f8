// Package args is the check every builtin makes before it reads its
// arguments: they must be a JSON object. It is its own package so that a
// builtin that needs nothing else of the rules (env) stays small.
package args

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Invalid rejects a call whose arguments are not a JSON object, and
// reports whether it did: text that is not JSON is ARG_JSON_INVALID with
// where and what is wrong, another JSON value ARG_REJECTED. Every builtin
// checks it first, so that broken arguments are never read as missing
// ones (an output that is "empty" because its JSON did not parse). No
// arguments at all, or only whitespace, are the empty object.
func Invalid(g *guest.Call) bool {
	l := g.Locale()
	if t := g.Get(abi.FieldArgsText); t.Exists() {
		if strings.TrimSpace(t.Str) == "" {
			return false
		}
		g.Rejected(abi.ArgJSONInvalid, abi.ArgJSONInvalid.Reason(l, "detail", abi.ArgsJSONDetail(l, t.Str)), abi.NextFixArgs.Text(l))
		return true
	}
	a := g.Get(abi.FieldArgs)
	if !a.Exists() || a.IsObject() {
		return false
	}
	detail := "应为 JSON 对象"
	if l == abi.LocaleEN {
		detail = "expected a JSON object"
	}
	g.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", g.Tool(), "detail", detail), abi.NextFixArgs.Text(l))
	return true
}
