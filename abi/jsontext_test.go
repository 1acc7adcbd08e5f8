package abi_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// encodingJSON is what encoding/json writes for s, HTML-escaped or not.
func encodingJSON(t testing.TB, s string, escapeHTML bool) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in     string
		html, nohtml string
	}{
		{"plain", "市场部 site", `"市场部 site"`, `"市场部 site"`},
		{"quotes and backslash", `a"b\c`, `"a\"b\\c"`, `"a\"b\\c"`},
		{"named controls", "\b\f\n\r\t", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"other controls", "\x00\x1f", `"\u0000\u001f"`, `"\u0000\u001f"`},
		{"html", "<a>&", `"\u003ca\u003e\u0026"`, `"<a>&"`},
		{"invalid utf-8", "a\xffb", `"a\ufffdb"`, `"a\ufffdb"`},
		{"line separators", "\u2028\u2029", `"\u2028\u2029"`, `"\u2028\u2029"`},
		{"empty", "", `""`, `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []struct {
				html bool
				want string
			}{{true, tt.html}, {false, tt.nohtml}} {
				got := string(abi.AppendJSONString([]byte("x"), tt.in, mode.html))
				if got != "x"+mode.want {
					t.Errorf("AppendJSONString(%q, html=%v) = %s, want x%s", tt.in, mode.html, got, mode.want)
				}
				if ref := encodingJSON(t, tt.in, mode.html); ref != mode.want {
					t.Errorf("encoding/json writes %s for %q (html=%v), the table says %s", ref, tt.in, mode.html, mode.want)
				}
			}
		})
	}
}

// FuzzAppendJSONString checks the bytes against encoding/json in both
// modes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\b\f\n", "<&>", "\xff\xfe", "\u2028", "市场部",
		// long runs, each kind of byte at every position of a word
		"plain ASCII text of some length, then \" and \\ and <b>&amp;</b>, a \x1f, a \x7f and 中文 and \xff ok",
		"01234567\x0089abcdef", "0123456\"89abcdef", "012345678\\abcdef", "01234567<>&9abcdef\u2029xyzxyzxyz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			if got, want := string(abi.AppendJSONString(nil, s, html)), encodingJSON(t, s, html); got != want {
				t.Fatalf("AppendJSONString(%q, html=%v) = %s, encoding/json %s", s, html, got, want)
			}
		}
	})
}
