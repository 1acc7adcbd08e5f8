// Package wordscan tests eight bytes of JSON text at a time: whether a
// run of a string's bytes can be copied or skipped as it is. Most text is
// plain ASCII, and inside a guest every pass of a byte loop is costly, so
// the scanners and writers of abi and canonical skip such runs a word at
// a time and look at bytes one by one only where a word needs it.
package wordscan

// lo has every byte 0x01, hi every byte 0x80.
const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// Word is the 8 bytes of s at i, little-endian; s must hold them.
func Word(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// WordOf is Word on bytes.
func WordOf(b []byte, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Plain reports whether none of the 8 bytes of x needs escaping or
// decoding in a JSON string: each is ASCII, at least 0x20 and neither '"'
// nor '\\'. A byte below 0x20 borrows in x-0x20*lo (the ASCII test covers
// the others).
func Plain(x uint64) bool {
	return (x&hi|(x-0x20*lo)|hasZero(x^'"'*lo)|hasZero(x^'\\'*lo))&hi == 0
}

// PlainHTML is Plain that also finds '<', '>' and '&'.
func PlainHTML(x uint64) bool {
	return Plain(x) && (hasZero(x^'<'*lo)|hasZero(x^'>'*lo)|hasZero(x^'&'*lo))&hi == 0
}

// hasZero has a byte's high bit set where x may have a zero byte, and never
// when x has none; combined with the ASCII test above there are no false
// alarms for ASCII bytes (it may report more, never fewer).
func hasZero(x uint64) uint64 { return (x - lo) &^ x & hi }
