package abi

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Word-at-a-time tests: lo has every byte 0x01, hi every byte 0x80.
const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// plainWord reports whether none of the 8 bytes of w needs escaping or
// decoding: each is ASCII, at least 0x20 and neither '"' nor '\\' (nor,
// with html, '<', '>' or '&').
func plainWord(w string, html bool) bool {
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	bad := x & hi        // non-ASCII
	bad |= (x - 0x20*lo) // a byte below 0x20 borrows (ASCII bytes only: with bad set for the others)
	bad |= hasZero(x ^ '"'*lo)
	bad |= hasZero(x ^ '\\'*lo)
	if html {
		bad |= hasZero(x^'<'*lo) | hasZero(x^'>'*lo) | hasZero(x^'&'*lo)
	}
	return bad&hi == 0
}

// hasZero has a byte's high bit set where x may have a zero byte, and never
// when x has none; combined with the ASCII test above there are no false
// alarms for ASCII bytes (it may report more, never fewer).
func hasZero(x uint64) uint64 { return (x - lo) &^ x & hi }

// AppendJSONString appends s to dst as a JSON string, byte for byte what
// encoding/json writes: '"', '\\' and control characters escaped (\b \f
// \n \r \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped;
// with escapeHTML also '<', '>' and '&' as json.Marshal does (off, as an
// Encoder with SetEscapeHTML(false)). Guests build their payloads with it
// instead of reflection, which inside wasm costs more than a decision.
func AppendJSONString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: inside a guest
		// every pass of a loop is costly, and most text is plain ASCII.
		if i+8 <= len(s) && plainWord(s[i:i+8], escapeHTML) {
			i += 8
			continue
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
