package jsonschema

import "testing"

func TestFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		format string
		good   []string
		bad    []string
	}{
		{"date-time",
			[]string{"2024-01-15T10:30:00Z", "2024-01-15t10:30:00z", "2024-02-29T23:59:60+08:00", "1999-12-31T00:00:00.123456-05:30", "2000-02-29T00:00:00Z"},
			[]string{"", "2024-01-15", "2024-01-15T10:30:00", "2024-01-15 10:30:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
				"2024-01-32T00:00:00Z", "2024-01-15T24:00:00Z", "2024-01-15T10:60:00Z", "2024-01-15T10:30:61Z", "2024-01-15T10:30:00.Z",
				"2024-01-15T10:30:00+0800", "2024-01-15T10:30:00+24:00", "2024-01-15T10:30:00Zx", "2024-01-15T1a:30:00Z", "2024-01-15T10:30:0aZ", "2024-01-15T10:30:00.5"}},
		{"date",
			[]string{"2024-01-15", "2024-02-29", "0001-01-01"},
			[]string{"2024-1-15", "2024-01-15T00:00:00Z", "2023-02-29", "2024-04-31", "2024-00-10", "2024-01-00", "24-01-15", "2024/01/15", "2024-01-1x"}},
		{"email",
			[]string{"a@b.co", "first.last+tag@example.com", "x_y-z@sub.domain.org", "a@localhost", "o'brien@x.io"},
			[]string{"", "x", "@b.co", "a@", "a@b..co", ".a@b.co", "a.@b.co", "a..b@c.d", "a b@c.d", "a@-b.co", "a@b-.co", "a@b_c.com", "a@b@c.com", "a@b.co.", "a@.b.co",
				"a@[127.0.0.1]", "é@b.co", "a@" + string(make80('x')) + ".com", string(make80('x')) + "@b.co"}},
		{"uuid",
			[]string{"123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000", "ABCDEFAB-CDEF-ABCD-EFAB-CDEFABCDEFAB"},
			[]string{"", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "123e4567-e89b-12d3-a456-4266141740000",
				"g23e4567-e89b-12d3-a456-426614174000", "123e4567_e89b-12d3-a456-426614174000", "{123e4567-e89b-12d3-a456-426614174000}"}},
		{"uri",
			[]string{"https://example.com/a?b=c#d", "urn:isbn:0451450523", "mailto:a@b.co", "file:///etc/hosts", "http://[::1]:80/", "x:%20", "git+ssh://h/p"},
			[]string{"", "example.com", "/path", "://x", "1http://x", "http://a b", "http://x/%zz", "http://x/%2", "http://x#a#b", "ht_tp://x", "http://x/\u00e9", "http://x/<>"}},
	}
	for _, tc := range cases {
		f := formatByName(tc.format)
		if f == fNone {
			t.Fatalf("format %q unknown", tc.format)
		}
		for _, s := range tc.good {
			if !f.check(s) {
				t.Errorf("%s: %q rejected", tc.format, s)
			}
		}
		for _, s := range tc.bad {
			if f.check(s) {
				t.Errorf("%s: %q accepted", tc.format, s)
			}
		}
	}
}

// make80 returns 80 copies of c.
func make80(c byte) []byte {
	b := make([]byte, 80)
	for i := range b {
		b[i] = c
	}
	return b
}
