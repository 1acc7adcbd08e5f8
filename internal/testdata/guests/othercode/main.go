//go:build wasip1

// Command othercode declares a code of its own but rejects with another
// plugin's, domainguard:DOMAIN_BLOCKED (see declaredcode): a result with a
// code its plugin did not declare breaks the result contract.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "othercode", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Codes: []abi.CodeSpec{{Name: "OWN_RULE", Outcome: abi.OutcomeRejected,
				Reason: abi.Texts{ZH: "违反规则", EN: "breaks the rule"}, Next: abi.Texts{ZH: "改参数", EN: "change the arguments"}}}},
		Handle: func(c *guest.Call) {
			c.Rejected("domainguard:DOMAIN_BLOCKED", "域名 evil.org 不在允许的范围内", "换用 example.com 下的域名")
		},
	})
}

func main() {}
