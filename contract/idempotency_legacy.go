package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// legacyCanonicalJSON is the canonical form idempotency keys had before
// RFC 8785's (see LegacyKeyFor); kept, unchanged, only to compute those keys:
// object keys sorted by UTF-8 bytes, no insignificant whitespace, strings as
// encoding/json writes them without HTML escaping, and numbers normalised by
// Go's float format (1.0, 1e0 and 1 all become 1; an integer literal keeps
// every digit; what float64 would round keeps its exact value).
func legacyCanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("contract: canonical json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("contract: canonical json: trailing data after the value")
	}
	var b bytes.Buffer
	if err := legacyWriteCanonical(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func legacyWriteCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(legacyNumber(x))
	case string:
		legacyWriteString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := legacyWriteCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			legacyWriteString(b, k)
			b.WriteByte(':')
			if err := legacyWriteCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("contract: canonical json: unexpected %T", v)
	}
	return nil
}

func legacyWriteString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // strings always encode
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

func legacyNumber(n json.Number) string {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if isIntLiteral(string(n)) {
		return string(n) // beyond int64: keep every digit
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return string(n)
	}
	out := strconv.FormatFloat(f, 'g', -1, 64)
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		out = strconv.FormatInt(int64(f), 10)
	}
	if !sameValue(string(n), out) {
		// float64 rounded it: 12345678901234567.0 and 12345678901234568
		// are two values, and must not share a key.
		return exactDecimal(string(n))
	}
	return out
}

// sameValue reports whether two JSON number literals are the same value,
// in time linear in their length (no big arithmetic: 1e-2000000 is cheap).
func sameValue(a, b string) bool { return exactDecimal(a) == exactDecimal(b) }

// exactDecimal is a JSON number literal in a form that equal values
// share and no other does: an integer's digits, else the significant
// digits and an exponent ("15e-1" for 1.50). Only for numbers that
// float64 cannot hold exactly, whose form must not be float64's.
func exactDecimal(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil {
			return lit // an exponent past int: only ever equal to itself
		}
		exp = e
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	mant = strings.TrimLeft(mant, "0")
	for strings.HasSuffix(mant, "0") {
		mant = mant[:len(mant)-1]
		exp++
	}
	if mant == "" {
		return "0"
	}
	sign := ""
	if neg {
		sign = "-"
	}
	if exp >= 0 && exp <= 400 {
		return sign + mant + strings.Repeat("0", exp)
	}
	return sign + mant + "e" + strconv.Itoa(exp)
}

func isIntLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
