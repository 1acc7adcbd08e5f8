package loop

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/state"
)

func TestWithCall(t *testing.T) {
	t.Parallel()
	long := `{"body":"` + strings.Repeat("é", maxInput) + `"}`
	tests := []struct {
		name, args, input, digest string
	}{
		{"JSON arguments", `{"b":1, "a":2}`, `{"b":1, "a":2}`, state.ArgsDigest([]byte(`{"a":2,"b":1}`))},
		{"not JSON", `{"a":`, `{"a":`, ""},
		{"cut, on a rune boundary", long, long[:maxInput-1] + "…", state.ArgsDigest([]byte(long))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := withCall(Event{Kind: KindTool}, "call_1", tt.args)
			if e.Call != "call_1" || e.Input != tt.input || e.ArgsDigest != tt.digest {
				t.Fatalf("event %+v", e)
			}
		})
	}
}
