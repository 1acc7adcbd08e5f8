package rules

import (
	"testing"
)

// FuzzAppendString checks AppendString against encoding/json as Report
// encodes (HTML escaping off).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b\c`, "\b\f\n\r\t\x00\x1f\x7f", "<b>&amp;", "网站 [ev:e1]",
		"\u2028\u2029", "\xff\xfe", "a\xe4\xb8", "\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}
