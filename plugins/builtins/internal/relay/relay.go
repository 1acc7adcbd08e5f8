// Package relay holds what the builtin plugins share: the argument check
// every builtin makes in the guest, and the relay of a builtin.* host
// service's decision into the call's result.
package relay

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/tidwall/gjson"
)

// Blank reports whether a value is missing or only whitespace.
func Blank(r gjson.Result) bool { return strings.TrimSpace(r.String()) == "" }

// ArgMissing rejects the call when a required string argument is blank.
func ArgMissing(c *guest.Call, name string) bool {
	if !Blank(c.Get("args." + name)) {
		return false
	}
	RejectArg(c, name)
	return true
}

// RejectArg rejects the call for a blank required argument.
func RejectArg(c *guest.Call, name string) {
	l := c.Locale()
	detail := name + " 不能为空"
	if l == abi.LocaleEN {
		detail = name + " must not be empty"
	}
	c.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", c.Tool(), "detail", detail), abi.NextFixArgs.Text(l))
}

// Decision runs a builtin.* host service and reports its decision: the
// outcome, code and texts it chose, and on success its effect and data.
func Decision(c *guest.Call, service string) {
	out, err := c.Service(service, nil)
	if err != nil {
		l := c.Locale()
		c.Failed(abi.ToolError, abi.ToolError.Reason(l, "tool", c.Tool(), "detail", err.Error()), abi.NextFail.Text(l), nil)
		return
	}
	d := gjson.ParseBytes(out)
	switch d.Get("outcome").Str {
	case "SUCCESS":
		if k := d.Get("effect").Str; k != "" {
			c.Effect(k, []byte(d.Get("payload").Raw))
		}
		var data []byte
		if r := d.Get("data"); r.Exists() {
			data = []byte(r.Raw)
		}
		c.Success(d.Get("text").Str, data)
	case "REJECTED":
		c.Rejected(abi.Code(d.Get("code").Str), d.Get("text").Str, d.Get("next").Str)
	default:
		c.Failed(abi.Code(d.Get("code").Str), d.Get("text").Str, d.Get("next").Str, nil)
	}
}
