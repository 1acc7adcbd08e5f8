//go:build wasip1

// Command toolpanic guards create_website: it passes a call whose domain
// is not evil.org, but panics when the domain is missing (it splits the
// domain without looking). Its author's cases pass; the kit's probes of
// create_website, built from them, do not. Other tools pass.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "toolpanic", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			if c.Get("tool").String() != "create_website" {
				c.Pass(nil)
				return
			}
			labels := strings.Split(c.Get("args.domain").String(), ".")
			if labels[len(labels)-2] == "evil" {
				c.Rejected(abi.ArgRejected, "evil.org is blocked", "ask the user for another domain")
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
