package server

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
)

// FuzzPlatformValue: an identity header's value becomes JSON or an error,
// never anything else: a Long passes as the exact digits sent, within
// int64; text decodes back to the header's value.
func FuzzPlatformValue(f *testing.F) {
	for _, seed := range []struct{ field, value string }{
		{"userId", "10086"}, {"userId", "-9223372036854775808"}, {"organId", "9223372036854775808"}, {"memberId", "007"},
		{"memberId", "1e3"}, {"name", "张三"}, {"organName", `市场部 "华东" <a&b>`}, {"deptPath", "/a/b\u2028c"}, {"name", "a\x00b"},
	} {
		f.Add(seed.field, seed.value)
	}
	f.Fuzz(func(t *testing.T, field, value string) {
		v, err := platformValue(field, value)
		switch {
		case err != nil:
			if v != nil {
				t.Fatalf("%s %q: a value and an error", field, value)
			}
			return
		case value == "":
			if v != nil {
				t.Fatalf("empty header gave %s", v)
			}
			return
		case !json.Valid(v):
			t.Fatalf("%s %q: %s is not JSON", field, value, v)
		}
		if slices.Contains(platformInts, field) {
			if _, err := strconv.ParseInt(value, 10, 64); err != nil || string(v) != value {
				t.Fatalf("%s %q: %s", field, value, v)
			}
			return
		}
		var back string
		if err := json.Unmarshal(v, &back); err != nil || back != value {
			t.Fatalf("%s %q: %s decodes to %q (%v)", field, value, v, back, err)
		}
	})
}
