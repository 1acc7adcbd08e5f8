package guest

import (
	"context"
	"crypto/sha256"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
)

// TestParseWalked decodes the host's walk answers as the SDK sees them.
func TestParseWalked(t *testing.T) {
	t.Parallel()
	req := []byte(`{"a":[{"id":1,"t":"x\ty"},{"id":"1","n":null,"ok":false}],"s":"v"}`)
	tests := []struct {
		path  string
		limit int
		want  Walked
	}{
		{"a", 10, Walked{Kind: WalkArray, Size: 2, Leaves: []string{"1", "x\ty", "false"}}},
		{"a", 1, Walked{Kind: WalkArray, Size: 2, Leaves: []string{"1"}}},
		{"a", 0, Walked{Kind: WalkArray, Size: 2}},
		{"a.0", 10, Walked{Kind: WalkObject, Size: 2, Leaves: []string{"1", "x\ty"}}},
		{"s", 10, Walked{Kind: WalkString, Leaves: []string{"v"}}},
		{"a.1.n", 10, Walked{Kind: WalkNull}},
		{"none", 10, Walked{Kind: WalkMissing}},
	}
	for _, tt := range tests {
		out, err := services.Walk(req, tt.path, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseWalked(string(out)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s/%d: %+v, want %+v", tt.path, tt.limit, got, tt.want)
		}
	}
}

// FuzzParseWalked: no answer, however cut or corrupted, panics the guest.
func FuzzParseWalked(f *testing.F) {
	good, _ := services.Walk([]byte(`{"a":[1,"x",true]}`), "a", 10)
	f.Add(string(good))
	f.Add(string(good[:12]))
	f.Add("[\xff\xff\xff\xff\xff\xff\xff\x7f")
	f.Fuzz(func(t *testing.T, b string) {
		w := parseWalked(b)
		for _, l := range w.Leaves {
			if len(l) > len(b) {
				t.Fatalf("a leaf longer than the answer")
			}
		}
	})
}

// TestHashNative: Hash is the SHA-256 of the raw text the envelope holds,
// spacing and key order as they are, and false for a path that matches
// nothing.
func TestHashNative(t *testing.T) {
	t.Parallel()
	raw := `{ "b" : 1, "a":[1, 2.50] }`
	var got [DigestSize]byte
	var ok, none bool
	m := abi.Manifest{Name: "hashes", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}}
	n, err := NewNative(Plugin{Manifest: m, Handle: func(c *Call) {
		got, ok = c.Hash("response")
		_, none = c.Hash("response.absent")
		c.Pass(nil)
	}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Call(context.Background(), []byte(`{"tool":"t","response":`+raw+`}`)); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256([]byte(raw)); got != want || !ok || none {
		t.Fatalf("Hash = %x, %v, missing %v; want %x, true, false", got, ok, none, want)
	}
}
