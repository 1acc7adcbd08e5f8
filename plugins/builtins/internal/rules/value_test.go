package rules

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestSameValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, a, b string
		want       bool
	}{
		{"number and its text", `200`, `"200"`, true},
		{"objects in another key order", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, true},
		{"array and text", `[1]`, `"[1]"`, false},
		{"null and text", `null`, `"null"`, false},
		{"different", `"a"`, `"b"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := SameValue(gjson.Parse(tt.a), gjson.Parse(tt.b)); got != tt.want {
				t.Fatalf("same(%s, %s) = %v", tt.a, tt.b, got)
			}
		})
	}
}
