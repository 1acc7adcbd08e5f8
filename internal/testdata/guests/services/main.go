//go:build wasip1

// Command services calls the host services and reports what they answered.
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
			d, derr := c.Service("digest", []byte("args"))
			_, uerr := c.Service("no.such.service", nil)
			out, _ := json.Marshal(map[string]any{
				"digest":  string(d),
				"err":     errText(derr),
				"unknown": errText(uerr),
				"title":   c.Get("args.title").String(),
				"has":     c.Has("args.title"),
				"keys":    c.Get("args.@keys").Raw,
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
