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
			_, err1 := net.Dial("tcp", "127.0.0.1:80")
			_, err2 := net.Listen("tcp", "127.0.0.1:0")
			_, err3 := net.LookupHost("localhost")
			c.Success("tried", []byte(fmt.Sprintf(`{"dial":%q,"listen":%q,"lookup":%q}`, errText(err1), errText(err2), errText(err3))))
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
