package envelope

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// Judge judges the request's response with its tool's success and error
// (CONTRACT_SPEC §6.1, §6.2; contract.Tool.Judge). It returns whether the
// business call succeeded and, when not, the model-facing reason of the
// TOOL_BUSINESS_FAILED observation in the request's locale.
func Judge(req Reader) (ok bool, reason string, err error) {
	t, err := Tool(req)
	if err != nil {
		return false, "", err
	}
	if t == nil || t.Success == nil {
		return true, "", nil // contract.Tool.Judge reads no response then
	}
	if holdsAt(req, t.Success) {
		return true, "", nil
	}
	v := t.Judge(Response(req))
	if v.OK {
		return true, "", nil
	}
	return false, BusinessReason(Locale(req), v), nil
}

// Holds is t.Judge(resp()).OK, reading only the value at the success
// path when that tells (holdsAt): resp, the whole response, is asked for
// only when it does not, so a guest that finds the success code is not
// given the response.
func Holds(req Reader, t *contract.Tool, resp func() []byte) bool {
	if t == nil || t.Success == nil {
		return true // contract.Tool.Judge reads no response then
	}
	if holdsAt(req, t.Success) {
		return true
	}
	return t.Judge(resp()).OK
}

// BusinessReason is the reason of a TOOL_BUSINESS_FAILED observation:
// "业务失败 [<downstream code>]：<message>" or, without a downstream code,
// the TOOL_BUSINESS_FAILED template "业务失败：<message>". The downstream
// code goes into the reason, never into the runtime code (TOOL_OBSERVATION
// §7.1). An empty response reads "返回为空" ("the response is empty").
func BusinessReason(l abi.Locale, v contract.Verdict) string {
	if v.Message == "" {
		v.Message = "返回为空"
		if l == abi.LocaleEN {
			v.Message = "the response is empty"
		}
	}
	if v.Code == "" {
		return abi.ToolBusinessFailed.Reason(l, "detail", v.Message)
	}
	if l == abi.LocaleEN {
		return "business failure [" + v.Code + "]: " + v.Message
	}
	return "业务失败 [" + v.Code + "]：" + v.Message
}

// holdsAt reports that success holds, having read only the value at its
// path of the response (the host reads it, the response is not copied in).
// It answers false whenever that cannot be told so — an op that only asks
// for a non-empty response, a path with other than plain keys, a value
// that is not there or does not compare — and the caller then judges the
// whole response. A value found at the path means the response is not
// empty, so on that value contract.Success.Holds is Compare.
func holdsAt(req Reader, s *contract.Success) bool {
	if s.Op == "" || !PlainPath(s.Path) {
		return false
	}
	got := Get(req, abi.FieldResponse+"."+s.Path)
	return got.Exists() && contract.Compare(s.Op, got, s.Value)
}

// PlainPath reports a non-empty dot path of plain keys (letters, digits,
// '_' and '-'), at most 256 bytes, which gjson reads as written and the
// host's path bounds take: under a member's name ("response.", "args.") it
// names in the envelope what it names in that member.
func PlainPath(p string) bool {
	if p == "" || len(p) > 256 || p[0] == '.' || p[len(p)-1] == '.' {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		case c == '.' && p[i-1] != '.':
		default:
			return false
		}
	}
	return true
}
