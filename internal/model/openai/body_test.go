package openai

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A body that is not the expected JSON is described by its type, size and
// a bounded one-line excerpt: an HTML page by its title, else its visible
// text (no script or style); the API key never shows.
func TestDescribe(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	tests := []struct {
		name, body, ctype, want string
	}{
		{"nginx page", "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			"text/html", "text/html, 150 bytes: 502 Bad Gateway"},
		{"a page without a title", `<html><head><style>p{color:red}</style><script>var k="x"</script></head><body><p>Upstream   connect error &amp; reset</p></body></html>`,
			"text/html; charset=utf-8", "text/html, 135 bytes: Upstream connect error & reset"},
		{"HTML sent as JSON", `<!DOCTYPE html><html><title>Gateway Timeout</title></html>`, "application/json", "application/json, 58 bytes: Gateway Timeout"},
		{"long text is bounded", long, "text/plain", "text/plain, 500 bytes: " + strings.TrimSpace(strings.Repeat("word ", 24)) + "…"},
		{"no text", "  \n ", "", "untyped, 4 bytes, no text"},
		{"the key is redacted", "bad key sk-secret-1234 given", "text/plain", "text/plain, 28 bytes: bad key [redacted] given"},
		{"control characters dropped", "a\x00b\x1b[31mc", "text/plain", "text/plain, 9 bytes: ab[31mc"},
		{"a key split by a control character is still redacted", "key sk-secret\x00-1234", "text/plain", "text/plain, 19 bytes: key [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := describe([]byte(tt.body), tt.ctype, "sk-secret-1234"); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := message(strings.Repeat("好", 400), ""); got != strings.Repeat("好", maxMessage)+"…" {
		t.Fatalf("message not bounded: %d bytes", len(got))
	}
}

// FuzzDescribe: whatever a provider sends, its description is one line of
// valid UTF-8, bounded, without the API key.
func FuzzDescribe(f *testing.F) {
	for _, s := range []string{"", "<html><title>502</title></html>", "<script>x</script>text", "\xff\xfe<", strings.Repeat("<a>", 500), "sk-secret-1234", "sk-secret\x00-1234"} {
		f.Add(s, "text/html")
	}
	f.Fuzz(func(t *testing.T, body, ctype string) {
		got := describe([]byte(body), ctype, "sk-secret-1234")
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r") || strings.Contains(got, "sk-secret-1234") {
			t.Fatalf("describe = %q", got)
		}
		if n := utf8.RuneCountInString(got); n > maxExcerpt+120 {
			t.Fatalf("describe is %d characters", n)
		}
	})
}
