package wordscan

import "testing"

// TestPlainEveryByte checks Plain and PlainHTML against a byte loop for
// every byte value at every position of a word of plain text.
func TestPlainEveryByte(t *testing.T) {
	t.Parallel()
	base := []byte("abcdefgh")
	for pos := range 8 {
		for c := range 256 {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			plain := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
			html := plain && c != '<' && c != '>' && c != '&'
			x := Word(string(b), 0)
			if x != WordOf(b, 0) {
				t.Fatalf("Word and WordOf differ on %q", b)
			}
			if Plain(x) != plain || PlainHTML(x) != html {
				t.Fatalf("byte %#x at %d: Plain %v PlainHTML %v, want %v %v", c, pos, Plain(x), PlainHTML(x), plain, html)
			}
		}
	}
}
