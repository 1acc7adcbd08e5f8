//go:build wasip1

// Command domaindeny is a tenant guard with a config: it rejects a call
// whose domain argument (config.arg, "domain" by default) is one of
// config.deny or under one, with a reason and a next step.
package main

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "domaindeny", Version: "0.1.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			ConfigSchema: []byte(`{"type":"object","additionalProperties":false,"required":["deny"],"properties":{"deny":{"type":"array","items":{"type":"string","minLength":1}},"arg":{"type":"string","minLength":1}}}`)},
		Handle: func(c *guest.Call) {
			arg := c.Config().Get("arg").String()
			if arg == "" {
				arg = "domain"
			}
			domain := strings.ToLower(c.Args().Get(arg).String())
			for _, d := range c.Config().Get("deny").Array() {
				if deny := strings.ToLower(d.String()); domain != "" && (domain == deny || strings.HasSuffix(domain, "."+deny)) {
					c.Rejected(abi.ArgRejected, "域名 "+domain+" 在租户的禁止名单上", "换一个不在禁止名单上的域名，或请用户确认域名")
					return
				}
			}
			c.Pass(nil)
		},
	})
}

func main() {}
