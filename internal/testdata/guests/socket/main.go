//go:build wasip1

// Command socket tries to open network connections; it reports what it got.
package main

import (
	"fmt"
	"net"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "socket", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			// Go's wasip1 port fakes listeners inside the guest; what must
			// fail is reaching anything outside it.
			_, err1 := net.Dial("tcp", c.Args().Get("addr").String())
			_, err2 := net.LookupHost("localhost")
			c.Success("tried", []byte(fmt.Sprintf(`{"dial":%q,"lookup":%q}`, errText(err1), errText(err2))))
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
