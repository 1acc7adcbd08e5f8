//go:build wasip1

// Command declaredcode is a tenant guard (domainguard 0.1.0) that declares
// its own error code, DOMAIN_BLOCKED, and rejects a call whose domain
// argument is not under example.com with it.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "domainguard", Version: "0.1.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Codes: []abi.CodeSpec{{Name: "DOMAIN_BLOCKED", Outcome: abi.OutcomeRejected,
				Reason: abi.Texts{ZH: "域名 {domain} 不在允许的范围内", EN: "domain {domain} is not allowed"},
				Next:   abi.Texts{ZH: "换用 example.com 下的域名", EN: "use a domain under example.com"}}}},
		Handle: func(c *guest.Call) {
			d := c.Args().Get("domain").String()
			if d != "" && d != "example.com" && !strings.HasSuffix(d, ".example.com") {
				c.Code("DOMAIN_BLOCKED", nil, "domain", d)
				return
			}
			c.Pass(nil)
		},
	})
}

func main() {}
