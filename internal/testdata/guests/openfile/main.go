//go:build wasip1

// Command openfile tries to read host files; it reports what it got.
package main

import (
	"fmt"
	"os"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "openfile", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}},
		Handle: func(c *guest.Call) {
			_, err1 := os.ReadFile("/etc/passwd")
			_, err2 := os.ReadDir("/")
			_, err3 := os.ReadFile("main.go")
			c.Success("tried", []byte(fmt.Sprintf(`{"passwd":%q,"root":%q,"cwd":%q}`, errText(err1), errText(err2), errText(err3))))
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
