//go:build wasip1

// Command shadowcode declares a code of its own named APPROVAL_REQUIRED, a
// runtime code's name: its manifest is refused at load.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "shadowcode", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Codes: []abi.CodeSpec{{Name: "APPROVAL_REQUIRED", Outcome: abi.OutcomeDeferred,
				Reason: abi.Texts{ZH: "须经确认", EN: "needs approval"}, Next: abi.Texts{ZH: "申请确认", EN: "ask for approval"}}}},
		Handle: func(c *guest.Call) { c.Code("APPROVAL_REQUIRED", nil) },
	})
}

func main() {}
