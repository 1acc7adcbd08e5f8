package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{` { "z" : { "y" : 1.0 , "x" : 1e2 } } `, `{"z":{"x":100,"y":1}}`},
		{`"<&>"`, `"<&>"`},
		{`12345678901234567890`, `12345678901234567890`},
		{`9007199254740993`, `9007199254740993`},
		{`0.5`, `0.5`},
		// RFC 8785's (ECMAScript's) form of what float64 holds; what it
		// would round keeps its exact value.
		{`1e25`, `1e+25`},
		{`-0`, `0`},
		{`1.5e300`, `1.5e+300`},
		{`12345678901234567.0`, `12345678901234567`},
		{`12345678901234568.0`, `12345678901234568`},
		{`1234567.5`, `1234567.5`},
		{`0.000001`, `0.000001`},
		{`"\u0001\u2028\ue000"`, "\"\\u0001\u2028\ue000\""},
		{`123456789012345678901234567890.0`, `123456789012345678901234567890`},
		{`1234567890123456789e-2`, `1234567890123456789e-2`},
		{`12345678901234567890.1`, `123456789012345678901e-1`},
		{`-0.10000000000000000000001`, `-10000000000000000000001e-23`},
		{`1e400`, `1` + strings.Repeat("0", 400)},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `1 2`, `"\ud800"`, "\"\xff\""} {
		if _, err := CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) succeeded", bad)
		}
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	keys := []string{"title", "spaceId"} // §14.2: idempotencyKey: ["title", "spaceId"]
	a := IdempotencyKey("create_article", keys, []byte(`{"title":"Hello","spaceId":7,"body":"v1"}`))
	b := IdempotencyKey("create_article", keys, []byte(`{"spaceId":7, "body":"v2", "title":"Hello"}`))
	if a != b {
		t.Error("parameters outside the key changed it")
	}
	if want := sum("spaceId=7\ntitle=\"Hello\"\n"); a != want {
		t.Errorf("key = %s, want %s (path order, canonical values)", a, want)
	}
	if c := IdempotencyKey("create_article", keys, []byte(`{"title":"Other","spaceId":7}`)); c == a {
		t.Error("a different title gave the same key")
	}
	// A missing path is skipped.
	if got, want := IdempotencyKey("t", keys, []byte(`{"title":"Hello"}`)), sum("title=\"Hello\"\n"); got != want {
		t.Errorf("missing path: %s, want %s", got, want)
	}
	// Nothing configured, or every path missing: tool name + digest of all args.
	all := sum("create_article\x00" + `{"body":"v1","x":1}`)
	if got := IdempotencyKey("create_article", nil, []byte(`{"x":1,"body":"v1"}`)); got != all {
		t.Errorf("fallback = %s, want %s", got, all)
	}
	if got := IdempotencyKey("create_article", []string{"title"}, []byte(`{"x":1,"body":"v1"}`)); got != all {
		t.Errorf("all missing = %s, want %s", got, all)
	}
	if IdempotencyKey("other_tool", nil, []byte(`{"x":1,"body":"v1"}`)) == all {
		t.Error("the fallback must include the tool name")
	}
	// Array paths collect every item.
	l1 := IdempotencyKey("t", []string{"lines[].code"}, []byte(`{"lines":[{"code":"A"},{"code":"B"}]}`))
	if want := sum("lines[].code=[\"A\",\"B\"]\n"); l1 != want {
		t.Errorf("array key = %s", l1)
	}
	tool := mustTool(t, `{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"},"idempotencyKey":["title","spaceId"]}`)
	if tool.KeyFor([]byte(`{"title":"Hello","spaceId":7}`)) != a {
		t.Error("Tool.KeyFor differs from IdempotencyKey")
	}
}

// FuzzCanonicalNumber: a number's canonical form is the same value (a
// float64 rounding would make two values share an idempotency key), and
// canonical twice is canonical once.
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.0", "1e2", "12345678901234567.0", "9007199254740993", "0.1", "-1.50e-3", "1e400", "123456789012345678901234567890.000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		if len(lit) > 64 || !json.Valid([]byte(lit)) || !isNumberLiteral(lit) {
			return
		}
		got, err := CanonicalJSON([]byte(lit))
		if err != nil {
			t.Fatalf("CanonicalJSON(%s): %v", lit, err)
		}
		if !sameValue(lit, string(got)) {
			t.Fatalf("CanonicalJSON(%s) = %s: another value", lit, got)
		}
		again, err := CanonicalJSON(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("CanonicalJSON(%s) = %s, then %s, %v", lit, got, again, err)
		}
	})
}

func isNumberLiteral(s string) bool {
	return s != "" && strings.Trim(s, "0123456789+-.eE") == ""
}

// The key before RFC 8785's form: equal to KeyFor where that form was already
// right, the old bytes where it was not (a control character, Go's float
// format), so a ledger entry reserved under it is found again.
func TestLegacyKeyFor(t *testing.T) {
	t.Parallel()
	tool := mustTool(t, `{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}}`)
	tool.Name = "pay"
	for _, tt := range []struct{ args, legacy, current string }{
		{`{"x":1,"body":"v1"}`, `{"body":"v1","x":1}`, `{"body":"v1","x":1}`},
		{`{"amount":1234567.5,"note":"a\u0001"}`, `{"amount":1.2345675e+06,"note":"a\u0001"}`, `{"amount":1234567.5,"note":"a\u0001"}`},
		{`{"rate":0.000001}`, `{"rate":1e-06}`, `{"rate":0.000001}`},
		{`{"\ue000":1,"\ud83d\ude00":2}`, "{\"\ue000\":1,\"\U0001F600\":2}", "{\"\U0001F600\":2,\"\ue000\":1}"},
	} {
		if got, want := tool.LegacyKeyFor([]byte(tt.args)), sum("pay\x00"+tt.legacy); got != want {
			t.Errorf("LegacyKeyFor(%s) = %s; want the hash of %s", tt.args, got, tt.legacy)
		}
		if got, want := tool.KeyFor([]byte(tt.args)), sum("pay\x00"+tt.current); got != want {
			t.Errorf("KeyFor(%s) = %s; want the hash of %s", tt.args, got, tt.current)
		}
	}
}

// legacyRight reports whether the old contract form already gave RFC 8785's
// bytes for raw: valid UTF-8, no U+2028 or U+2029 in a string (escaped by
// encoding/json), every key below U+E000 (where UTF-8 and UTF-16 orders
// agree), every number written alike by both.
func legacyRight(raw string) bool {
	if !utf8.ValidString(raw) || strings.ContainsAny(raw, "\u2028\u2029") || strings.Contains(raw, `\u`) {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false
	}
	var right func(v any) bool
	right = func(v any) bool {
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			es6, _ := json.Marshal(f)
			return err == nil && legacyNumber(x) == string(es6) && exactDecimal(string(x)) == exactDecimal(string(es6))
		case []any:
			for _, e := range x {
				if !right(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if strings.IndexFunc(k, func(r rune) bool { return r >= 0xe000 }) >= 0 || !right(e) {
					return false
				}
			}
		}
		return true
	}
	return right(v)
}

// FuzzCanonicalLegacy compares CanonicalJSON with the old contract form on
// the inputs where that was right, and checks it refuses what is not JSON.
func FuzzCanonicalLegacy(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5,"x"],"a":null}`, `[1e21,0.000001,-0,100]`, `{"\u00e9":"\t<&>"}`, `[1.0,1e2]`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := CanonicalJSON([]byte(raw))
		old, oldErr := legacyCanonicalJSON([]byte(raw))
		if err != nil {
			if json.Valid([]byte(raw)) && utf8.ValidString(raw) && !strings.Contains(raw, `\u`) {
				t.Fatalf("CanonicalJSON(%q): %v; encoding/json says it is valid", raw, err)
			}
			return
		}
		if oldErr == nil && legacyRight(raw) && !bytes.Equal(got, old) {
			t.Fatalf("CanonicalJSON(%q) = %q; the old form, right here, gives %q", raw, got, old)
		}
	})
}
