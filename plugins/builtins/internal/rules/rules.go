// Package rules holds what the builtin plugins share to decide their rules
// inside the guest: the call as a decision sees it (locale, tool, arguments,
// the granted state views), the skill contract parsed once per text, the
// decision and how it is reported, and the comparisons the spec's rules use
// (normalised text, same JSON value).
//
// Everything here runs inside the plugin, so a new build of a builtin can
// change any rule without a host rebuild. The envelope is read through the
// host's general path query (guest.Call.Get), which copies in only the
// value asked for: scanning a large envelope byte by byte inside the guest
// (c.Raw) costs some 30 ms per MiB. No host function decides anything for
// it.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Call is one builtin call as a rule sees it.
type Call struct {
	G    *guest.Call
	L    abi.Locale
	Tool string
}

// New reads the locale and tool of c.
func New(c *guest.Call) *Call {
	return &Call{G: c, L: c.Locale(), Tool: c.Tool()}
}

// ArgValue returns the argument name (a plain key).
func (c *Call) ArgValue(name string) gjson.Result { return c.G.Get(abi.FieldArgs + "." + name) }

// Arg returns a string argument, trimmed.
func (c *Call) Arg(name string) string { return strings.TrimSpace(c.ArgValue(name).String()) }

// Get reads a gjson path of the envelope.
func (c *Call) Get(path string) gjson.Result { return c.G.Get(path) }

// View decodes the state view granted as capability v into dst, a pointer
// to its abi type, and reports whether it was present (a null view is not).
func (c *Call) View(v abi.Capability, dst any) (bool, error) {
	return c.ViewPart(v, "", dst)
}

// ViewPart is View reading only part of the view: part is a gjson
// projection of it, such as "{nodeId,contract}" or
// "{items:items.#.{id,status}}", which the host evaluates so that only those
// fields are copied into the guest. Fields outside part stay zero. A view
// that has none of them is read whole, which tells a missing or null view
// from an empty one.
func (c *Call) ViewPart(v abi.Capability, part string, dst any) (bool, error) {
	path := guest.StatePath(v, "")
	if part != "" {
		if r := c.G.Get(path + "." + part); r.IsObject() && r.Raw != "{}" && decodeView(r, dst) {
			return true, nil
		}
	}
	r := c.G.Get(path)
	if !r.Exists() || r.Type == gjson.Null {
		return false, nil
	}
	if decodeView(r, dst) {
		return true, nil
	}
	if err := json.Unmarshal([]byte(r.Raw), dst); err != nil {
		return false, fmt.Errorf("%s: %w", v, err)
	}
	return true, nil
}

// Node returns the fields parts (see ViewPart; "" for all) of state.node,
// or a FAILED decision when it is missing. The host bounds a projection to
// five fields, so a rule that needs more gives more parts.
func (c *Call) Node(part string, more ...string) (*abi.NodeView, *Decision) {
	var n abi.NodeView
	ok, err := c.ViewPart(abi.CapStateNode, part, &n)
	for _, p := range more {
		if !ok || err != nil {
			break
		}
		_, err = c.ViewPart(abi.CapStateNode, p, &n)
	}
	if err != nil {
		d := ToolError(c.L, c.Tool, err.Error())
		return nil, &d
	}
	if !ok {
		d := ToolError(c.L, c.Tool, c.Text(NoState, "view", string(abi.CapStateNode)))
		return nil, &d
	}
	return &n, nil
}

// Contract returns the skill contract of state.node, parsed once per text
// (see Parse). A node without one runs under the empty contract (every tool
// by the default rules of §1.3).
//
// A node part without "contract" leaves it to this call, which reads it
// with a plain path query: the host finds it natively and the guest only
// copies it, where a projection that includes it would be scanned again
// inside the guest.
func (c *Call) Contract(n *abi.NodeView) (*contract.Contract, *Decision) {
	raw := n.Contract
	if raw == nil {
		raw = []byte(c.G.Get(guest.StatePath(abi.CapStateNode, "contract")).Raw)
	}
	ct, err := Parse(n.SkillKey, raw)
	if err != nil {
		d := ToolError(c.L, c.Tool, err.Error())
		return nil, &d
	}
	return ct, nil
}

// Views decodes optional state views given as (capability, destination)
// pairs; a missing view stays zero.
func (c *Call) Views(pairs ...any) *Decision {
	for i := 0; i+1 < len(pairs); i += 2 {
		if _, err := c.View(pairs[i].(abi.Capability), pairs[i+1]); err != nil {
			d := ToolError(c.L, c.Tool, err.Error())
			return &d
		}
	}
	return nil
}

// Part decodes the fields part of an optional state view (see ViewPart); a
// missing view stays zero.
func (c *Call) Part(v abi.Capability, part string, dst any) *Decision {
	if _, err := c.ViewPart(v, part, dst); err != nil {
		d := ToolError(c.L, c.Tool, err.Error())
		return &d
	}
	return nil
}

// Decision is one builtin result: the outcome, code and texts (already in
// the call's locale), and on success the effect to emit and the data.
type Decision struct {
	Outcome abi.Outcome
	Code    abi.Code
	Text    string
	Next    string
	Effect  string
	Payload any // encoded with encoding/json; a []byte is the encoded payload
	Data    any
}

// Rejected is the decision for a broken rule.
func Rejected(code abi.Code, text, next string) Decision {
	return Decision{Outcome: abi.OutcomeRejected, Code: code, Text: text, Next: next}
}

// Succeeded is the decision for an accepted call with its effect (none when
// effect is "").
func Succeeded(text, effect string, payload any) Decision {
	return Decision{Outcome: abi.OutcomeSuccess, Text: text, Effect: effect, Payload: payload}
}

// ToolError is the FAILED decision for a builtin whose runtime state is
// missing or broken (TOOL_OBSERVATION §5: not a rule the model broke).
func ToolError(l abi.Locale, tool, detail string) Decision {
	return Decision{Outcome: abi.OutcomeFailed, Code: abi.ToolError,
		Text: abi.ToolError.Reason(l, "tool", tool, "detail", detail), Next: abi.NextFail.Text(l)}
}

// Report answers c with d: one result, and on success its effect first.
func Report(c *guest.Call, d Decision) {
	switch d.Outcome {
	case abi.OutcomeSuccess:
		if d.Effect != "" {
			b, ok := d.Payload.([]byte)
			var err error
			if !ok {
				b, err = encode(d.Payload)
			}
			if err != nil {
				Report(c, ToolError(c.Locale(), c.Tool(), err.Error()))
				return
			}
			c.Effect(d.Effect, b)
		}
		var data []byte
		if d.Data != nil {
			var err error
			if data, err = encode(d.Data); err != nil {
				Report(c, ToolError(c.Locale(), c.Tool(), err.Error()))
				return
			}
		}
		c.Success(d.Text, data)
	case abi.OutcomeRejected:
		c.Rejected(d.Code, d.Text, d.Next)
	default:
		c.Failed(d.Code, d.Text, d.Next, nil)
	}
}

// encode marshals v without escaping HTML characters, as the model wrote
// them.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("rules: encode: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Blank reports whether a value is missing or only whitespace.
func Blank(r gjson.Result) bool { return strings.TrimSpace(r.String()) == "" }

// ArgMissing rejects the call when a required string argument is blank.
func ArgMissing(c *Call, name string) bool {
	if !Blank(c.ArgValue(name)) {
		return false
	}
	RejectArg(c, name)
	return true
}

// RejectArg rejects the call for a blank required argument.
func RejectArg(c *Call, name string) {
	detail := name + " 不能为空"
	if c.L == abi.LocaleEN {
		detail = name + " must not be empty"
	}
	c.G.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(c.L, "tool", c.Tool, "detail", detail), abi.NextFixArgs.Text(c.L))
}
