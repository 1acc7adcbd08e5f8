//go:build wasip1

// Command ptecho is a well-behaved builtin for the kit's own tests: tool
// "echo" returns its arguments as data, rejects arguments that are not an
// object, and refuses tools it does not provide. Its description is left
// empty when the config asks for it, so the manifest check has something to
// find.
package main

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{
			Name: "ptecho", Version: "1.0.0", Role: abi.RoleBuiltin,
			Tools: []abi.ToolSpec{{Name: "echo", Description: "returns its arguments",
				InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)}},
			ConfigSchema: []byte(`{"type":"object","properties":{"prefix":{"type":"string"}},"additionalProperties":false}`),
		},
		Handle: func(c *guest.Call) {
			l := c.Locale()
			if c.Tool() != "echo" {
				c.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", c.Tool()), abi.NextCatalog.Text(l))
				return
			}
			args := c.Args()
			if !args.IsObject() {
				c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", "echo", "detail", "args"), abi.NextFixArgs.Text(l))
				return
			}
			c.Success(c.Config().Get("prefix").String()+args.Get("text").String(), []byte(args.Raw))
		},
	})
}

func main() {}
