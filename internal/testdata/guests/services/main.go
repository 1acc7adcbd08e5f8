//go:build wasip1

// Command services calls the host primitives and reports what they answered.
package main

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "services", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			d := c.Digest("args")
			w := c.Walk("args", 2)
			h, hashed := c.Hash("args")
			_, hashedNone := c.Hash("args.absent")
			// a literal, so that a test's large arguments stay out of the
			// answer (TestExistsCopiesNothing holds the output limit low)
			its := c.Items("!"+`[{"title":"Q3","spaceId":7}]`, 5)
			var members []string
			for _, m := range its.MembersOf(0) {
				members = append(members, m.Key+"="+string(m.Kind)+m.Raw+"|"+m.Text)
			}
			problems, err := c.Validate("!"+`{"type":"object","required":["body"],"properties":{"spaceId":{"type":"string"}}}`, "args")
			_, bad := c.Validate("!"+`{"type":"nope"}`, "args")
			out, _ := json.Marshal(map[string]any{
				"digest":    d[:],
				"digestHex": c.DigestHex("args"),
				"missing":   c.DigestHex("args.absent"),
				"problems":  problems,
				"schemaErr": errText(err),
				"badSchema": errText(bad),
				"title":     c.Get("args.title").String(),
				"has":       c.Has("args.title"),
				"hasBig":    c.Has("args.big"),
				"keys":      c.Get("args.@keys").Raw,
				"walk":      []any{string(w.Kind), w.Size, w.Leaves},
				"canonical": string(c.Canonical(`!{"b":1,"a":[1, 2.50]}`)),
				"walkNone":  c.Walk("args.absent", 10).Kind,
				"hash":      []any{h[:], hashed, hashedNone},
				"items":     []any{string(its.Kind), len(its.List), string(its.List[0].Kind), members},
			})
			c.Success("ok", out)
		},
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func main() {}
