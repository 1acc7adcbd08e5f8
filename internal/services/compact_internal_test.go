package services

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendCompact holds appendCompact to json.Compact, and a limit to
// the first limit bytes of the whole: the scan that stops at the limit
// writes what the whole scan would have, cut.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "b": [1, 2, 3]}`,
		"{\n  \"msg\": \"a  b \\\" c\",\n  \"n\": 12\n}",
		`["   ", " \"x\" ", {"k" : "v"}]`,
		`"only a string with spaces   inside"`,
		`{"records":[{"id":1000,"title":"Spring launch article number 0"}]}`,
	} {
		for _, limit := range []int{-1, 0, 1, 5, 13, 200} {
			f.Add(s, limit)
		}
	}
	f.Fuzz(func(t *testing.T, src string, limit int) {
		if !json.Valid([]byte(src)) || limit < -1 {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(src)); err != nil {
			t.Fatal(err)
		}
		w := want.Bytes()
		if limit >= 0 && len(w) > limit {
			w = w[:limit]
		}
		got := appendCompact([]byte("pre"), src, limit)
		if string(got[:3]) != "pre" || string(got[3:]) != string(w) {
			t.Fatalf("appendCompact(%q, %d) = %q, want %q", src, limit, got[3:], w)
		}
	})
}
