package contract

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// MessageLimit is how many bytes of a response become the error message
// when error.message is not configured or not found (§6.2).
const MessageLimit = 512

// Verdict is the business judgement of one tool response (§6.1, §6.2).
type Verdict struct {
	// OK is false when success is configured and does not hold, or the
	// response is empty.
	OK bool
	// Code is the business error code read through error.code. It is ""
	// when OK, or when the path is not configured or not found: the caller
	// then reports TOOL_BUSINESS_FAILED.
	Code string
	// Message is the business error message read through error.message,
	// else the whole response, truncated to MessageLimit bytes. "" when OK.
	Message string
}

// Judge applies the tool's success and error contract to a response. A nil
// tool, or a tool without success, judges every response OK: only a failing
// call layer makes such a call fail.
func (t *Tool) Judge(resp []byte) Verdict {
	if t == nil || t.Success == nil {
		return Verdict{OK: true}
	}
	if !t.Success.Holds(resp) {
		return t.businessError(resp)
	}
	return Verdict{OK: true}
}

func (t *Tool) businessError(resp []byte) Verdict {
	v := Verdict{}
	var ep ErrorPaths
	if t.Error != nil {
		ep = *t.Error
	}
	if ep.Code != "" {
		if r := GetDot(resp, ep.Code); hasValue(r) && !r.IsObject() && !r.IsArray() {
			v.Code = r.String()
		}
	}
	if ep.Message != "" {
		if r := GetDot(resp, ep.Message); hasValue(r) {
			v.Message = r.String()
		}
	}
	if v.Message == "" {
		v.Message = Truncate(compact(resp), MessageLimit)
	}
	return v
}

// Holds reports whether the condition holds for a response. An empty
// response (no bytes, only whitespace, or null) never holds. An unset op
// only requires a non-empty response.
func (s *Success) Holds(resp []byte) bool {
	if isEmptyResponse(resp) {
		return false
	}
	got := GetDot(resp, s.Path)
	if s.Op == "" {
		return true
	}
	return Compare(s.Op, got, s.Value)
}

func isEmptyResponse(resp []byte) bool {
	t := bytes.TrimSpace(resp)
	return len(t) == 0 || string(t) == "null"
}

// Compare applies an operator to the value found in a response (got may not
// exist) and the configured value (raw JSON; nil when not configured):
//
//   - EQ: equal; when both sides read as numbers they compare numerically
//     (200 equals "200"), else as strings. A missing got equals only null.
//   - NE: not EQ.
//   - IN / NOT_IN: EQ to some element of the value array (a non-array value
//     is a one-element list) / to none of them.
//   - TRUTHY: see Truthy.
//   - EXISTS: the path exists, null included.
//
// An unknown operator never holds.
func Compare(op Op, got gjson.Result, want json.RawMessage) bool {
	switch op {
	case OpEQ:
		return equal(got, gjson.ParseBytes(want))
	case OpNE:
		return !equal(got, gjson.ParseBytes(want))
	case OpIN, OpNotIN:
		w := gjson.ParseBytes(want)
		list := []gjson.Result{w}
		if w.IsArray() {
			list = w.Array()
		}
		in := false
		for _, x := range list {
			if equal(got, x) {
				in = true
				break
			}
		}
		return in == (op == OpIN)
	case OpTruthy:
		return Truthy(got)
	case OpExists:
		return got.Exists()
	}
	return false
}

// Truthy is the TRUTHY operator: not missing, not null, not false, not 0,
// not "", not "0" or "false", not an empty array or object.
func Truthy(r gjson.Result) bool {
	if !r.Exists() {
		return false
	}
	switch r.Type {
	case gjson.Null, gjson.False:
		return false
	case gjson.Number:
		n, ok := number(r.Raw)
		return !ok || n.Sign() != 0
	case gjson.String:
		return r.Str != "" && r.Str != "0" && r.Str != "false"
	case gjson.JSON:
		if r.IsArray() {
			return len(r.Array()) > 0
		}
		empty := true
		r.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
		return !empty
	}
	return true
}

func equal(got, want gjson.Result) bool {
	if !got.Exists() || !want.Exists() {
		return !got.Exists() && (!want.Exists() || want.Type == gjson.Null)
	}
	if a, ok := smallInt(got); ok {
		if b, ok := smallInt(want); ok {
			return a == b
		}
	}
	if a, ok := numeric(got); ok {
		if b, ok := numeric(want); ok {
			return a.Cmp(b) == 0
		}
	}
	return scalarString(got) == scalarString(want)
}

// numeric reads a JSON number, or a string holding a JSON-style number.
func numeric(r gjson.Result) (*big.Rat, bool) {
	switch r.Type {
	case gjson.Number:
		return number(r.Raw)
	case gjson.String:
		return number(strings.TrimSpace(r.Str))
	}
	return nil, false
}

// isNumber reports whether s is a JSON number,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and nothing else.
func isNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return false
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		i = digits(s, i+1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// smallInt reads a JSON-style integer of at most 18 digits (got or want of
// EQ), exactly: it equals another such integer when their big.Rat values
// are equal.
func smallInt(r gjson.Result) (int64, bool) {
	var s string
	switch r.Type {
	case gjson.Number:
		s = r.Raw
	case gjson.String:
		s = strings.TrimSpace(r.Str)
	default:
		return 0, false
	}
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func number(s string) (*big.Rat, bool) {
	if len(s) > 64 || !isNumber(s) {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		// Bound the exponent: big.Rat would otherwise build huge numbers.
		exp := strings.TrimLeft(s[i+1:], "+-")
		if len(exp) > 4 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// scalarString is the string form used by EQ: a string's content, else the
// compact JSON text.
func scalarString(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.Str
	}
	return string(compact([]byte(r.Raw)))
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return bytes.TrimSpace(b)
	}
	return buf.Bytes()
}

// Truncate cuts b to at most limit bytes on a UTF-8 boundary, marking a cut
// with "…".
func Truncate(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
