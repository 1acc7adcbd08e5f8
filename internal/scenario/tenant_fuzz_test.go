package scenario

import (
	"encoding/json"
	"testing"
)

// FuzzPluginModule feeds a plugins entry arbitrary JSON: it never panics, a
// string is its path, and whatever decodes encodes back to the same entry.
func FuzzPluginModule(f *testing.F) {
	for _, s := range []string{`"./m.wasm"`, `{"path":"./m.wasm","sha256":"ab","capabilities":["clock"]}`, `{"build":"./cmd"}`,
		`{"file":"x"}`, `null`, `42`, `{"capabilities":[1]}`, `[]`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m PluginModule
		if err := json.Unmarshal(b, &m); err != nil {
			return
		}
		var path string
		if json.Unmarshal(b, &path) == nil && m.Path != path {
			t.Fatalf("%s: path %q, want %q", b, m.Path, path)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var again PluginModule
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("%s does not decode again: %v", out, err)
		}
		a, _ := json.Marshal(again)
		if string(a) != string(out) {
			t.Fatalf("round trip %s → %s", out, a)
		}
	})
}
