package canonical

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestCanonicalTable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{}`, `{}`},
		{`[]`, `[]`},
		{` { } `, `{}`},
		{"[\t\n\r ]", `[]`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":1,"a":2}`, `{"a":2}`},
		{`{"a":1,"b":0,"a":3,"a":2}`, `{"a":2,"b":0}`},
		{`{"a":{"x":1,"x":{"y":1,"y":2}},"a":{"z":[{"k":1,"k":2}]}}`, `{"a":{"z":[{"k":2}]}}`},
		{`[{"b":1,"a":[{"d":1,"c":2}]},{"a":1,"a":[]}]`, `[{"a":[{"c":2,"d":1}],"b":1},{"a":[]}]`},
		{"{ \"b\" :\n[ 1 ,\t2 ] ,\r\n \"a\" : { } }", `{"a":{},"b":[1,2]}`},
		{`{"":1,"a":2,"A":3}`, `{"":1,"A":3,"a":2}`},
		{`["a\"b","\\","\/","\b\f\n\r\t"]`, `["a\"b","\\","/","\b\f\n\r\t"]`},
		{`["\u0041\u00e9\u4e2d","é中"]`, `["Aé中","é中"]`},
		{`["\ud83d\ude00","\ud83d","\ude00x","\ud83dx"]`, ""},
		{`{"\u0062":1,"a":2,"\u0061":3}`, `{"a":3,"b":1}`},
		{`["\u0000\u001f\u007f"]`, `["\x00\x1f\x7f"]`},
		{"[\"\xff\xfe\"]", `["\xff\xfe"]`},
		{`[1e400,-0,1.0,0.5e-3,-1E+2,123456789012345678901234567890]`, `[1e400,-0,1.0,0.5e-3,-1E+2,123456789012345678901234567890]`},
		{`[true,false,null,{"n":null}]`, `[true,false,null,{"n":null}]`},
		{`[[[[]]],[{}]]`, `[[[[]]],[{}]]`},
		// Not well-formed: the lenient result is kept.
		{`{"a":1} "b":2`, ""},
		{`[1 2,,3]`, ""},
		{`{'a':1}`, ""},
		{`{"a":01}`, ""},
		{`{"a" 1 "b" 2}`, ""},
		{`[tru, nul]`, ""},
		{`[1,]`, ""},
		{`{"a":"x` + "\x01" + `"}`, ""},
		{`[[[`, ""},
		{`{"a":[1,{"b":}]}`, ""},
		{"[1]\x00", ""},
	} {
		v := gjson.Parse(tt.in)
		got, ref := string(JSON(v)), string(referenceCanonical(v))
		if got != ref {
			t.Errorf("JSON(%q) = %q; the reference gives %q", tt.in, got, ref)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("JSON(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalScalars(t *testing.T) {
	for _, v := range []gjson.Result{
		{},
		gjson.Parse(`"a\u00e9"`),
		gjson.Parse(`12.50`),
		gjson.Parse(`true`),
		gjson.Parse(`null`),
		gjson.Get(`{"a":1}`, "b"),
		gjson.Get(`{"a":{"c":1, "b":2}}`, "a"),
		gjson.Get(`{"a":[{"c":1, "b":2},{"d":[]}]}`, "a.#.c"),
		{Type: gjson.String, Str: "made by hand"},
		{Type: gjson.JSON},
		{Type: gjson.JSON, Raw: "x"},
	} {
		if got, ref := string(JSON(v)), string(referenceCanonical(v)); got != ref {
			t.Errorf("JSON(%#v) = %q; the reference gives %q", v, got, ref)
		}
	}
}

func deepArray(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func deepObject(depth int) string {
	return strings.Repeat(`{"b":0,"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// Deep well-formed input is canonicalised without recursion; deep malformed
// input gets the documented marker instead of the quadratic lenient path.
func TestCanonicalDeep(t *testing.T) {
	const depth = 100_000
	if got := string(JSON(gjson.Parse(deepArray(depth)))); got != deepArray(depth) {
		t.Errorf("deep array: got %d bytes, want %d", len(got), 2*depth)
	}
	want := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat(`,"b":0}`, depth)
	if got := string(JSON(gjson.Parse(deepObject(depth)))); got != want {
		t.Errorf("deep object: got %d bytes, want %d", len(got), len(want))
	}
	// At the fallback's bound the lenient result is kept; past it, the marker.
	shallow := strings.Repeat("[", legacyMaxDepth) + "1,,2" + strings.Repeat("]", legacyMaxDepth)
	if got, ref := JSON(gjson.Parse(shallow)), referenceCanonical(gjson.Parse(shallow)); !bytes.Equal(got, ref) {
		t.Errorf("malformed at depth %d: %q; the reference gives %q", legacyMaxDepth, got, ref)
	}
	for _, bad := range []string{
		strings.Repeat("[", legacyMaxDepth+1) + "1,,2" + strings.Repeat("]", legacyMaxDepth+1),
		strings.Repeat("[", depth),
		deepArray(depth) + "x",
		strings.Repeat(`{"a":`, depth),
	} {
		got := JSON(gjson.Parse(bad))
		if want := "!" + fmt.Sprintf("%q", bad); string(got) != want {
			t.Errorf("malformed deep input of %d bytes: got %.40q…", len(bad), got)
		}
	}
}

// FuzzCanonical checks the linear Canonical against the original one: the
// same bytes for every input, well-formed or not, except malformed input past
// the fallback's depth, which must carry the marker.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2,{"d":null,"c":"x"}],"a":true}`,
		`["\ud83d\ude00","\ud83d",1e400,-0,1.0]`,
		" {\n\t\"k\" : [ ] , \"k\" : { } } ",
		`{"a":1} "b":2`,
		`[1 2,,3`,
		`{"\u0061":1,"a":2}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []gjson.Result{gjson.Parse(s), gjson.Get(s, "a"), gjson.Get(s, "0")} {
			got := JSON(v)
			if v.IsObject() || v.IsArray() {
				p := new(canonParser)
				if valid := json.Valid([]byte(v.Raw)); p.parse(v.Raw) != valid {
					t.Fatalf("parse(%q) = %v; encoding/json says %v", v.Raw, !valid, valid)
				}
				if _, ok := legacyCanonical(nil, v, 0); !ok && !json.Valid([]byte(v.Raw)) {
					if !bytes.HasPrefix(got, []byte("!")) {
						t.Fatalf("JSON(%q) = %q; want the marker", v.Raw, got)
					}
					continue
				}
			}
			if ref := referenceCanonical(v); !bytes.Equal(got, ref) {
				t.Fatalf("JSON(%q) = %q; the reference gives %q", v.Raw, got, ref)
			}
		}
	})
}

// BenchmarkCanonicalDeep shows linear growth with nesting depth; the
// original implementation ("old") is quadratic and skipped at 100,000.
func BenchmarkCanonicalDeep(b *testing.B) {
	for _, depth := range []int{1_000, 10_000, 100_000} {
		v := gjson.Parse(deepObject(depth))
		b.Run(fmt.Sprintf("new/depth=%d", depth), func(b *testing.B) {
			b.SetBytes(int64(len(v.Raw)))
			for b.Loop() {
				JSON(v)
			}
		})
		if depth > 10_000 {
			continue
		}
		b.Run(fmt.Sprintf("old/depth=%d", depth), func(b *testing.B) {
			b.SetBytes(int64(len(v.Raw)))
			for b.Loop() {
				referenceCanonical(v)
			}
		})
	}
}

// BenchmarkCanonicalTypical compares both on a flat request of a few hundred
// bytes, the common case.
func BenchmarkCanonicalTypical(b *testing.B) {
	v := gjson.Parse(`{"tool":"order.create","arguments":{"customer":"C-1029","lines":[{"goodsCode":"A-1","qty":2,"price":10.5},{"goodsCode":"B-7","qty":1,"price":3}],"note":"deliver \u00e0 l'entr\u00e9e","rush":false},"tenant":"t1"}`)
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			JSON(v)
		}
	})
	b.Run("old", func(b *testing.B) {
		for b.Loop() {
			referenceCanonical(v)
		}
	})
}

// TestAppendQuote: the printable-ASCII fast path quotes as strconv does.
func TestAppendQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain text 123", `a"b`, `a\b`, "tab\t", "\x7f", "é", "\u2028", "\xff", "~ !"} {
		if got, want := string(appendQuote(nil, s)), strconv.Quote(s); got != want {
			t.Errorf("appendQuote(%q) = %s, want %s", s, got, want)
		}
	}
}
