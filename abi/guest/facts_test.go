package guest

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
)

func TestAppendFacts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		facts []abi.Fact
	}{
		{"one", []abi.Fact{{Path: "spaceId", Source: "EVIDENCE", Detail: "ev_1"}}},
		{"no detail", []abi.Fact{{Path: "a", Source: "MODEL"}, {Path: "lines[0].code", Source: "USER", Detail: "msg"}}},
		{"escapes", []abi.Fact{{Path: "a\"<>&\\\n\t\x01", Source: "é\u2028\u2029", Detail: "\xff\xfe ok"}}},
		{"empty", []abi.Fact{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, _ := json.Marshal(tc.facts)
			if got := appendFacts(nil, tc.facts); string(got) != string(want) {
				t.Fatalf("appendFacts = %s, want %s", got, want)
			}
		})
	}
}

// FuzzAppendFacts: the hand encoder writes json.Marshal's bytes.
func FuzzAppendFacts(f *testing.F) {
	f.Add("path", "MODEL", "")
	f.Add("a<b", "\u2028", "\xff")
	f.Fuzz(func(t *testing.T, path, source, detail string) {
		facts := []abi.Fact{{Path: path, Source: source, Detail: detail}, {Path: detail, Source: path}}
		want, _ := json.Marshal(facts)
		if got := appendFacts(nil, facts); string(got) != string(want) {
			t.Fatalf("appendFacts = %s, want %s", got, want)
		}
	})
}
