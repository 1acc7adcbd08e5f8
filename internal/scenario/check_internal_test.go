package scenario

import (
	"encoding/json"
	"testing"
)

func TestSameJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1.0}`, true},
		{`{"id":1234567890123456789}`, `{"id":1234567890123456789}`, true},
		{`{"id":1234567890123456789}`, `{"id":1234567890123456800}`, false},
		{`9007199254740993`, `9007199254740992`, false},
		{`123456789012345678901234567890`, `1.2345678901234568e+29`, false},
		{`1e400`, `1e400`, true},
		{`-0`, `0`, true},
		{`"x"`, `"y"`, false},
		{`{`, `{`, false},
	}
	for _, tc := range cases {
		if got := sameJSON(json.RawMessage(tc.a), json.RawMessage(tc.b)); got != tc.same {
			t.Errorf("sameJSON(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
