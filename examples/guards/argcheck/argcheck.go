// Package argcheck is a small but realistic guard: before a call runs, it
// checks the model's arguments against the tool's input JSON Schema, the way
// ArgPolicy does (CONTRACT_SPEC §13): parameters the contract binds with
// from or const are exempt from "required", because binding fills them
// later. Every failing field is named in one rejection.
//
// The schema check runs through the host's validate service, so in wasm the
// guard does little more than decide; the same source runs natively, where
// the SDK calls the same validator in-process. It is the guard the
// benchmarks run both ways.
package argcheck

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the argcheck guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "argcheck", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "checks arguments against the tool's input schema",
		Phases:      []abi.Phase{abi.PhaseBefore},
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	l := c.Locale()
	if !c.Has(abi.FieldSchema) {
		c.Pass(nil)
		return
	}
	doc := abi.FieldArgs
	if c.Has(abi.FieldBound) {
		doc = abi.FieldBound
	}
	errs, err := c.Validate(abi.FieldSchema, doc)
	if err != nil {
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", err.Error()), abi.NextFail.Text(l))
		return
	}
	var problems []string
	for _, e := range errs {
		if e.Keyword == "required" && bound(c, e.Path) {
			continue
		}
		problems = append(problems, e.Error())
	}
	if len(problems) > 0 {
		sep := "；"
		if l == abi.LocaleEN {
			sep = "; "
		}
		c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", strings.Join(problems, sep)), abi.NextFixArgs.Text(l))
		return
	}
	c.Pass(nil)
}

// bound reports whether the contract fills the parameter with from or const.
func bound(c *guest.Call, path string) bool {
	spec := c.Get(abi.FieldContract + ".args." + escape(path))
	return spec.Get("from").String() != "" || spec.Get("const").Exists()
}

// escape quotes gjson's path syntax in a parameter path.
func escape(path string) string {
	if !strings.ContainsAny(path, `*?#|@\`) {
		return path
	}
	b := make([]byte, 0, len(path)+4)
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '*', '?', '#', '|', '@', '\\':
			b = append(b, '\\')
		}
		b = append(b, path[i])
	}
	return string(b)
}
