package canonical

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func TestCanonicalTable(t *testing.T) {
	t.Parallel()
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
		{`{"\u0062":1,"a":2,"\u0061":3}`, `{"a":3,"b":1}`},
		{`[true,false,null,{"n":null}]`, `[true,false,null,{"n":null}]`},
		{`[[[[]]],[{}]]`, `[[[[]]],[{}]]`},
		// Strings (RFC 8785 section 3.2.2.2): the fewest escapes.
		{`["a\"b","\\","\/","\b\f\n\r\t"]`, `["a\"b","\\","/","\b\f\n\r\t"]`},
		{`["\u0041\u00e9\u4e2d","é中"]`, `["Aé中","é中"]`},
		{`["\u0000\u0001\u001f\u007f"]`, `["\u0000\u0001\u001f` + "\x7f" + `"]`},
		{`["\u2028\u2029\ue000\ufeff<&>"]`, "[\"\u2028\u2029\ue000\ufeff<&>\"]"},
		{`["\ud83d\ude00","\uD83D\uDE00"]`, `["😀","😀"]`},
		{`"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"`, `"€$\u000f\nA'B\"\\\\\"/"`},
		// Keys sort by UTF-16 code units: U+1F600 (a surrogate pair, D83D)
		// before U+E000 and U+FB33, though its UTF-8 bytes sort after theirs.
		{`{"\ue000":1,"😀":2,"\ufb33":3,"a":4,"\u0080":5}`, "{\"a\":4,\"\u0080\":5,\"😀\":2,\"\ue000\":1,\"\ufb33\":3}"},
		// RFC 8785 section 3.2.3's sorting example.
		{`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		// RFC 8785 section 3.2.2's example, but for its first number: the
		// literal 333333333.33333329 is not the value of its nearest float64
		// (printed 333333333.3333333), so it keeps its exact value.
		{`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
			`{"literals":[null,true,false],"numbers":[33333333333333329e-8,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// Numbers: ECMAScript's form of the value.
		{`[1.0,1e2,1E+2,100,-0,0.0,-0.0,0e5,0.5e-3,1234567.5,0.000001,0.0000001,1e21,1e20,123e-2]`,
			`[1,100,100,100,0,0,0,0,0.0005,1234567.5,0.000001,1e-7,1e+21,100000000000000000000,1.23]`},
		// Numbers float64 would round keep their exact value.
		{`[333333333.3333333,333333333.33333329]`, `[333333333.3333333,33333333333333329e-8]`},
		{`[12345678901234567,12345678901234568,12345678901234567.0,9007199254740993]`,
			`[12345678901234567,12345678901234568,12345678901234567,9007199254740993]`},
		{`[0.10000000000000000001,1e400,-1e400,1e-400,123456789012345678901234567890,12345678901234567890.1]`,
			`[10000000000000000001e-20,1` + strings.Repeat("0", 400) + `,-1` + strings.Repeat("0", 400) + `,1e-400,123456789012345678901234567890,123456789012345678901e-1]`},
		{`[1e1099511627777,-1e1099511627777,0E10000000000000,-0.0e-99999999999999999999]`, `[1e1099511627777,-1e1099511627777,0,0]`},
		// Scalars at the top.
		{`"x"`, `"x"`},
		{` 1.50 `, `1.5`},
		{`null`, `null`},
	} {
		got := string(JSON(gjson.Parse(tt.in)))
		if got != tt.want {
			t.Errorf("JSON(%q) = %q; want %q", tt.in, got, tt.want)
		}
		c, err := Canonical([]byte(tt.in))
		if err != nil || string(c) != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, c, err, tt.want)
		}
	}
}

// TestCanonicalNumbersRFC8785 checks the float64 serialisation against RFC
// 8785's table (Appendix B): IEEE 754 bits and the expected text. The text
// is itself the shortest literal of the value, so it must come back as is,
// and the value written in exponent form with every digit must give it too.
func TestCanonicalNumbersRFC8785(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	} {
		b, err := hex.DecodeString(tt.bits)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		if got := string(appendES6(nil, f)); got != tt.want {
			t.Errorf("appendES6(%s) = %s; want %s", tt.bits, got, tt.want)
		}
		if got := string(JSON(gjson.Parse(tt.want))); got != tt.want {
			t.Errorf("JSON(%s) = %s; want it unchanged", tt.want, got)
		}
		if lit := strconv.FormatFloat(f, 'e', -1, 64); lit != "-0e+00" {
			if got := string(JSON(gjson.Parse(lit))); got != tt.want {
				t.Errorf("JSON(%s) = %s; want %s", lit, got, tt.want)
			}
		}
	}
}

// Different numbers never share a form; equal ones always do.
func TestCanonicalNumbersDistinct(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"12345678901234567", "12345678901234568", false},
		{"295147905179352825856", "295147905179352830000", false}, // 2^68 and ECMAScript's print of it
		{"0.1", "0.1000000000000000055511151231257827", false},    // 0.1 and its float64's exact value
		{"1e400", "1e401", false},
		{"1e-400", "0", false},
		{"1.5", "15e-1", true},
		{"100", "1E+2", true},
		{"12345678901234567", "1234567890123456700e-2", true},
		{"-0", "0", true},
	} {
		x, y := JSON(gjson.Parse(tt.a)), JSON(gjson.Parse(tt.b))
		if bytes.Equal(x, y) != tt.same {
			t.Errorf("JSON(%s) = %s, JSON(%s) = %s; same = %v, want %v", tt.a, x, tt.b, y, !tt.same, tt.same)
		}
	}
}

// Malformed input gets the marker: '!' and the Go-quoted raw text.
func TestCanonicalMalformed(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"a":1} "b":2`, `[1 2,,3]`, `{'a':1}`, `{"a":01}`, `{"a" 1 "b" 2}`, `[tru, nul]`, `[1,]`,
		`{"a":"x` + "\x01" + `"}`, `[[[`, `{"a":[1,{"b":}]}`, "[1]\x00", "[\"\xff\xfe\"]",
		`["\ud83d"]`, `["\ude00x"]`, `["\ud83dx"]`, `["\ud83d\u0041"]`, `["\x"]`, `["\u12"]`, `[1.]`, `[-]`, `[.5]`, `[1e]`,
	} {
		v := gjson.Parse(in)
		if !v.IsObject() && !v.IsArray() {
			continue // gjson sees no container; the marker is checked by Canonical below
		}
		if got, want := string(JSON(v)), "!"+strconv.Quote(v.Raw); got != want {
			t.Errorf("JSON(%q) = %q; want %q", in, got, want)
		}
	}
	for _, in := range []string{``, ` `, `{`, `1 2`, `"a`, `tru`, `01`, `"\ud800"`, "\"\xff\"", `{"a":1}x`} {
		if c, err := Canonical([]byte(in)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("Canonical(%q) = %q, %v; want ErrNotJSON", in, c, err)
		}
	}
}

func TestCanonicalScalars(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    gjson.Result
		want string
	}{
		{gjson.Result{}, `null`},
		{gjson.Parse(`"a\u00e9"`), `"aé"`},
		{gjson.Parse(`12.50`), `12.5`},
		{gjson.Parse(`true`), `true`},
		{gjson.Get(`{"a":1}`, "b"), `null`},
		{gjson.Get(`{"a":{"c":1, "b":2}}`, "a"), `{"b":2,"c":1}`},
		{gjson.Get(`{"a":[{"c":1, "b":2},{"d":[]}]}`, "a.#.c"), `[1]`},
		{gjson.Result{Type: gjson.String, Str: "made\tby hand"}, `"made\tby hand"`},
		{gjson.Result{Type: gjson.Number, Num: 1e21}, `1e+21`},
		{gjson.Result{Type: gjson.False}, `false`},
		{gjson.Result{Type: gjson.String, Str: "\xff"}, `!`},
		{gjson.Result{Type: gjson.JSON, Raw: "x"}, `!"x"`},
	} {
		if got := string(JSON(tt.v)); got != tt.want {
			t.Errorf("JSON(%#v) = %q; want %q", tt.v, got, tt.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "b", -1}, {"ab", "a", 1}, {"\ue000", "😀", 1}, {"\uffff", "\U00010000", 1},
		{"😀", "😁", -1}, {"x😀", "x\ufb33", -1}, {"\u0080", "\u07ff", -1}, {"é", "e", 1},
	} {
		got := compareUTF16(tt.a, tt.b)
		if (got < 0) != (tt.want < 0) || (got > 0) != (tt.want > 0) {
			t.Errorf("compareUTF16(%q, %q) = %d; want sign of %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func deepArray(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func deepObject(depth int) string {
	return strings.Repeat(`{"b":0,"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// Deep input is canonicalised without recursion, malformed deep input gets
// the marker.
func TestCanonicalDeep(t *testing.T) {
	const depth = 100_000
	if got := string(JSON(gjson.Parse(deepArray(depth)))); got != deepArray(depth) {
		t.Errorf("deep array: got %d bytes, want %d", len(got), 2*depth)
	}
	want := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat(`,"b":0}`, depth)
	if got := string(JSON(gjson.Parse(deepObject(depth)))); got != want {
		t.Errorf("deep object: got %d bytes, want %d", len(got), len(want))
	}
	for _, bad := range []string{
		strings.Repeat("[", 65) + "1,,2" + strings.Repeat("]", 65),
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

// oldFormRight reports whether the form before RFC 8785's
// (referenceCanonical) already gave RFC 8785's bytes for raw, which is
// well-formed: every string quoted alike by Go's strconv and by RFC 8785
// (no control character but \b\f\n\r\t... of which strconv writes \b, \f, \n,
// \r, \t as JSON does; no character strconv escapes), every key below U+E000
// (where UTF-8 and UTF-16 orders agree), every number written in
// ECMAScript's form (as encoding/json writes a float64).
func oldFormRight(raw string) bool {
	if !utf8.ValidString(raw) {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false
	}
	quotedAlike := func(s string, key bool) bool {
		for _, r := range s {
			if key && r >= 0xe000 ||
				r < 0x20 && !strings.ContainsRune("\b\f\n\r\t", r) ||
				r >= 0x7f && !strconv.IsPrint(r) {
				return false
			}
		}
		return true
	}
	var right func(v any) bool
	right = func(v any) bool {
		switch x := v.(type) {
		case string:
			return quotedAlike(x, false)
		case json.Number:
			f, err := x.Float64()
			b, _ := json.Marshal(f)
			return err == nil && string(b) == string(x) && x != "-0"
		case []any:
			for _, e := range x {
				if !right(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if !quotedAlike(k, true) || !right(e) {
					return false
				}
			}
		}
		return true
	}
	return right(v)
}

// FuzzCanonical checks JSON against the form before RFC 8785's on the inputs
// where that was right, and on every input that the output is well-formed
// JSON, canonical (the same again), and of equal value, or the marker.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2,{"d":null,"c":"x"}],"a":true}`,
		`["\ud83d\ude00","\ud83d",1e400,-0,1.0]`,
		" {\n\t\"k\" : [ ] , \"k\" : { } } ",
		`{"a":1} "b":2`,
		`[1 2,,3`,
		`{"\u0061":1,"a":2}`,
		`{"\ue000":1,"😀":2,"x":[12345678901234567,0.000001,1e21]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []gjson.Result{gjson.Parse(s), gjson.Get(s, "a"), gjson.Get(s, "0")} {
			got := JSON(v)
			if !v.IsObject() && !v.IsArray() {
				continue
			}
			valid := json.Valid([]byte(v.Raw)) && utf8.ValidString(v.Raw) && !strings.Contains(v.Raw, `\u`)
			parsed := new(canonParser).parse(v.Raw)
			if valid && !parsed {
				t.Fatalf("parse(%q) = false; encoding/json says it is valid", v.Raw)
			}
			if !parsed {
				if want := "!" + strconv.Quote(v.Raw); string(got) != want {
					t.Fatalf("JSON(%q) = %q; want the marker", v.Raw, got)
				}
				continue
			}
			if !json.Valid(got) {
				t.Fatalf("JSON(%q) = %q: not JSON", v.Raw, got)
			}
			if again := JSON(gjson.ParseBytes(got)); !bytes.Equal(again, got) {
				t.Fatalf("JSON(%q) = %q, then %q", v.Raw, got, again)
			}
			var before, after any
			if json.Unmarshal([]byte(v.Raw), &before) == nil {
				if err := json.Unmarshal(got, &after); err != nil || !reflect.DeepEqual(before, after) {
					t.Fatalf("JSON(%q) = %q: another value (%v)", v.Raw, got, err)
				}
			}
			if oldFormRight(v.Raw) {
				if ref := referenceCanonical(v); !bytes.Equal(got, ref) {
					t.Fatalf("JSON(%q) = %q; the old form, right here, gives %q", v.Raw, got, ref)
				}
			}
		}
	})
}

// BenchmarkCanonicalDeep shows linear growth with nesting depth; the old
// recursive form ("old") is quadratic and skipped at 100,000.
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
