package guest

import (
	"reflect"
	"testing"

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
