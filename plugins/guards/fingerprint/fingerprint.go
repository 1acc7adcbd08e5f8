// Package fingerprint is the Fingerprint guard (CONTRACT_SPEC §13 steps 4
// and 8; FAILURES_AND_EVIDENCE §3): it stops a model that repeats the same
// call without getting anywhere.
//
// Before a call it trips the breaker when the node's last N recorded calls
// (state.fingerprints.limit, default 3) are all SUCCESS calls of the same
// tool with the same canonical arguments (the host's digest primitive on the
// bound arguments): REJECTED FINGERPRINT_TRIP, and the node fails, which the
// reason says and NEXT_FAIL asks for.
//
// After a call that executed (SUCCESS or FAILED) it records the call with a
// fingerprint.record effect: tool, argument digest, result digest (of the
// raw response), the node's state digest (state.fingerprints.stateDigest)
// and the outcome. When a SUCCESS call has the same arguments, result and
// state digests as the previous record, it produced no new information.
//
// Decision (TOOL_OBSERVATION §4): such a call becomes FAILED
// FINGERPRINT_REPEAT with NEXT_CHANGE_STRATEGY, keeping the response as
// data. It is not REJECTED or DEFERRED because the tool did run; it is not
// left SUCCESS because a SUCCESS advances, resetting the no-progress
// counter, so a model could loop on an identical call until the breaker;
// FAILED stalls, which is what a call without new information is. A FAILED
// result keeps its own, more specific next step.
//
// Tools listed in state.fingerprints.repeatTools legitimately repeat (a
// clock, a poll) and are exempt from both rules, as is the write the user
// just approved (state.approval.approved with the same tool and argument
// digest; CONTRACT_SPEC §14.1 step 3). Exempt calls are still recorded, so
// the record stays the node's true sequence of calls.
package fingerprint

import (
	"strconv"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the Fingerprint guard.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "fingerprint", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "trips on repeated identical successful calls and flags calls that bring nothing new",
		Phases:      []abi.Phase{abi.PhaseBefore, abi.PhaseAfter},
		Capabilities: []abi.Capability{
			abi.CapStateFingerprints, abi.CapStateApproval, abi.CapEffectFingerprint,
		},
	},
	Handle: handle,
}

// DefaultLimit is the breaker's default count of identical successful calls.
const DefaultLimit = 3

func view(sub string) string { return fingerprintsView + "." + sub }

// The views' paths, made once (guest.StatePath escapes the view's name).
var (
	fingerprintsView = guest.StatePath(abi.CapStateFingerprints, "")
	approvedPath     = guest.StatePath(abi.CapStateApproval, "approved")
	limitPath        = view("limit")
	recentCountPath  = view("recent.#")
	stateDigestPath  = view("stateDigest")
)

// digest is the host's digest primitive on an envelope path, in hex.
func digest(c *guest.Call, path string) string { return c.DigestHex(path) }

func handle(c *guest.Call) {
	tool := c.Tool()
	argsPath := abi.FieldArgs
	if c.Has(abi.FieldBound) {
		argsPath = abi.FieldBound
	}
	if c.Phase() == abi.PhaseAfter {
		after(c, tool, argsPath)
		return
	}
	if exempt(c, tool) {
		c.Pass(nil)
		return
	}
	d := digest(c, argsPath)
	if approved(c, tool, d) {
		c.Pass(nil)
		return
	}
	limit := c.Get(limitPath).Int()
	if limit <= 0 {
		limit = DefaultLimit
	}
	n := c.Get(recentCountPath).Int()
	if n < limit {
		c.Pass(nil)
		return
	}
	for i := n - limit; i < n; i++ {
		r := c.Get(view("recent." + strconv.FormatInt(i, 10)))
		if r.Get("outcome").Str != "SUCCESS" || r.Get("tool").Str != tool || r.Get("argsDigest").Str != d {
			c.Pass(nil)
			return
		}
	}
	l := c.Locale()
	reason := abi.FingerprintTrip.Reason(l, "tool", tool, "count", strconv.FormatInt(limit, 10))
	if l == abi.LocaleEN {
		reason += "; the breaker tripped and the node fails"
	} else {
		reason += "，已触发熔断，节点失败"
	}
	c.Rejected(abi.FingerprintTrip, reason, abi.NextFail.Text(l))
}

func exempt(c *guest.Call, tool string) bool {
	return c.Has(view(`repeatTools.#(=="` + tool + `")`))
}

func approved(c *guest.Call, tool, d string) bool {
	a := c.Get(approvedPath)
	return a.Exists() && a.Get("tool").Str == tool && a.Get("argsDigest").Str == d
}

func after(c *guest.Call, tool, argsPath string) {
	outcome := c.Get(abi.FieldResult + ".outcome").String()
	if outcome != "SUCCESS" && outcome != "FAILED" {
		c.Pass(nil)
		return
	}
	d := digest(c, argsPath)
	rd := digest(c, abi.FieldResponse)
	sd := c.Get(stateDigestPath).String()
	rec := make([]byte, 0, 320)
	rec = append(rec, `{"tool":`...)
	rec = appendString(rec, tool)
	rec = append(rec, `,"argsDigest":"`...)
	rec = append(rec, d...)
	rec = append(rec, `","resultDigest":"`...)
	rec = append(rec, rd...)
	rec = append(rec, '"')
	if sd != "" {
		rec = append(rec, `,"stateDigest":`...)
		rec = appendString(rec, sd)
	}
	rec = append(rec, `,"outcome":"`...)
	rec = append(rec, outcome...)
	rec = append(rec, '"')
	if id := c.CallID(); id != "" {
		rec = append(rec, `,"callId":`...)
		rec = appendString(rec, id)
	}
	rec = append(rec, '}')
	c.Effect(abi.EffectFingerprintRecord, rec)
	if outcome != "SUCCESS" || exempt(c, tool) || approved(c, tool, d) || !repeats(c, tool, d, rd, sd) {
		c.Pass(nil)
		return
	}
	l := c.Locale()
	c.Failed(abi.FingerprintRepeat, abi.FingerprintRepeat.Reason(l, "tool", tool), abi.NextChangeStrategy.Text(l),
		[]byte(c.Get(abi.FieldResult+".data").Raw))
}

// repeats reports whether the previous record has the same tool and the
// same argument, result and state digests.
func repeats(c *guest.Call, tool, d, rd, sd string) bool {
	n := c.Get(recentCountPath).Int()
	if n == 0 {
		return false
	}
	p := c.Get(view("recent." + strconv.FormatInt(n-1, 10)))
	return p.Get("tool").Str == tool && p.Get("argsDigest").Str == d && p.Get("resultDigest").Str == rd && p.Get("stateDigest").Str == sd
}

// appendString appends s as a JSON string.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"' || b == '\\':
			out = append(out, '\\', b)
		case b < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
		default:
			out = append(out, b)
		}
	}
	return append(out, '"')
}
