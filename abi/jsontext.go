package abi

import (
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/wordscan"
)

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s to dst as a JSON string, byte for byte what
// encoding/json writes: '"', '\\' and control characters escaped (\b \f
// \n \r \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped;
// with escapeHTML also '<', '>' and '&' as json.Marshal does (off, as an
// Encoder with SetEscapeHTML(false)). Guests build their payloads with it
// instead of reflection, which inside wasm costs more than a decision.
func AppendJSONString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	bytewise := 0 // below it, bytes are looked at one by one
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: inside a guest
		// every pass of a loop is costly, and most text is plain ASCII.
		// A word that does need a look is then gone through byte by byte,
		// so text dense with escapes pays the word test once per word.
		if i >= bytewise && i+8 <= len(s) {
			if x := wordscan.Word(s, i); wordscan.Plain(x) && (!escapeHTML || wordscan.PlainHTML(x)) {
				i += 8
				continue
			}
			bytewise = i + 8
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
