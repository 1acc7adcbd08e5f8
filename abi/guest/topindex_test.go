//go:build !wasip1

package guest

import (
	"testing"

	"github.com/tidwall/gjson"
)

var topIndexEnvelopes = []string{
	`{"tool":"t","args":{"a":1,"b":[1,2,{"c":"x"}]},"state":{"state.node":{"id":"n"}},"response":"s{","n":5}`,
	`{"a":{"x":1},"a":{"y":2}}`,
	`[1,2]`,
	`{"k\u0061":1,"ka":{"z":true}}`,
	` {"args" : { "q" : "v" } } `,
}

var topIndexPaths = []string{
	"tool", "args", "args.a", "args.b.2.c", "args.b.1", "args.zz", "state.state\\.node.id", "response", "response.x",
	"n", "n.x", "missing", "missing.x", "a.x", "a.y", "ka.z", "kа", "args.q", "args.", "args.b.#", "args|@this",
}

// TestTopIndex: the index answers as gjson does on the whole envelope.
func TestTopIndex(t *testing.T) {
	t.Parallel()
	for _, env := range topIndexEnvelopes {
		for _, p := range topIndexPaths {
			checkTopIndex(t, env, p)
		}
	}
}

func checkTopIndex(t *testing.T, env, path string) {
	t.Helper()
	var ti topIndex
	got, ok := ti.get([]byte(env), path)
	if !ok {
		return
	}
	want := gjson.GetBytes([]byte(env), path)
	if got.Raw != want.Raw || got.Exists() != want.Exists() || got.Type != want.Type || got.Str != want.Str {
		t.Fatalf("%s on %s: index %#v, gjson %#v", path, env, got, want)
	}
}

// FuzzTopIndex: on any envelope and path the index answers as gjson does
// or steps aside.
func FuzzTopIndex(f *testing.F) {
	for _, env := range topIndexEnvelopes {
		for _, p := range topIndexPaths {
			f.Add(env, p)
		}
	}
	f.Fuzz(func(t *testing.T, env, path string) {
		checkTopIndex(t, env, path)
	})
}
