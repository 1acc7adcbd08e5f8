package yamljson

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestToJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want, err string
	}{
		{name: "numbers as written, keys in order",
			in:   "z: 1\norderId: 1234567890123456789\nnext: 9007199254740993\ntotal: 123456789012345678901234567890\none: 1.0\nzero: -0\nhuge: 1e400\na: 2\n",
			want: `{"z":1,"orderId":1234567890123456789,"next":9007199254740993,"total":123456789012345678901234567890,"one":1.0,"zero":-0,"huge":1e400,"a":2}`},
		{name: "flow style", in: `{b: [1, 2.50, {y: x, x: y}], a: "s"}`, want: `{"b":[1,2.50,{"y":"x","x":"y"}],"a":"s"}`},
		{name: "quoted numbers are strings", in: `{id: "1234567890123456789", n: '2'}`, want: `{"id":"1234567890123456789","n":"2"}`},
		{name: "scalars", in: "[true, false, null, ~, yes, hello, 2001-12-14, \"<&>\"]", want: `[true,false,null,null,"yes","hello","2001-12-14","<&>"]`},
		{name: "YAML numbers JSON lacks", in: "[0x1F, 0o17, +1, 1_000]", want: `[31,15,1,1000]`},
		{name: "anchor, alias and merge", in: "base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3, z: 4}\nagain: *b\n",
			want: `{"base":{"x":1,"y":2},"use":{"y":3,"z":4,"x":1},"again":{"x":1,"y":2}}`},
		{name: "merge of several", in: "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b]}\n", want: `{"a":{"x":1},"b":{"x":2,"y":2},"c":{"x":1,"y":2}}`},
		{name: "number keys are text", in: "{1: a, 1.0: b}", want: `{"1":"a","1.0":"b"}`},
		{name: "empty", in: "", want: `null`},
		{name: "block string", in: "s: |\n  two\n  lines\n", want: `{"s":"two\nlines\n"}`},
		{name: "duplicate key", in: "a: 1\na: 2\n", err: `yamljson: line 2: key "a" is written twice`},
		{name: "infinity", in: "x: .inf\n", err: "yamljson: line 1: .inf is not a JSON number"},
		{name: "not a number", in: "x: .nan\n", err: "yamljson: line 1: .nan is not a JSON number"},
		{name: "mapping key", in: "? {a: 1}\n: x\n", err: "yamljson: line 1: a key must be a scalar"},
		{name: "bad YAML", in: "a: [1, 2\n", err: "yamljson: yaml: line 1: did not find expected ',' or ']'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ToJSON([]byte(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, ErrYAML) {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
}

// TestAliasBomb: aliases that double at each level are bounded.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x]\n")
	for i := 1; i < 40; i++ {
		prev := "*a" + itoa(i-1)
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [" + prev + ", " + prev + "]\n")
	}
	if _, err := ToJSON([]byte(b.String())); !errors.Is(err, ErrYAML) {
		t.Fatalf("err = %v, want a bound", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// FuzzToJSON: whatever the YAML, the output is JSON or an error.
func FuzzToJSON(f *testing.F) {
	for _, s := range []string{"a: 1", "[1e400, -0, 1.0]", "a: &a {b: *a}", "<<: {x: 1}", "? [a]\n: b", "x: !!binary aGk="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := ToJSON([]byte(in))
		if err == nil && !json.Valid(out) {
			t.Fatalf("ToJSON(%q) = %s: not JSON", in, out)
		}
	})
}
