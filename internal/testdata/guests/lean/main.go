//go:build wasip1

// Command lean is an after-phase guard that reports what its request's own
// bytes hold of the response and what the host answers for it.
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "lean", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}},
		Handle: func(c *guest.Call) {
			raw := c.Raw()
			h, _ := c.Hash("response")
			out, _ := json.Marshal(map[string]any{
				"rawValid":    json.Valid(raw),
				"rawResponse": bytes.Contains(raw, []byte(`"response"`)),
				"rawData":     bytes.Contains(raw, []byte(`"data"`)),
				"response":    c.Get("response").Raw,
				"code":        c.Get("response.code").Int(),
				"data":        c.Get("result.data").Raw,
				"size":        c.Size("response"),
				"hash":        hex.EncodeToString(h[:]),
				"digest":      c.DigestHex("response"),
			})
			c.Success("ok", out)
		},
	})
}

func main() {}
