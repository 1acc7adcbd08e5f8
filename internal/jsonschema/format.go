package jsonschema

import "strings"

// format is a supported value of the "format" keyword.
type format uint8

const (
	fNone format = iota
	fDateTime
	fDate
	fEmail
	fUUID
	fURI
)

var formatNames = [...]string{
	fDateTime: "date-time",
	fDate:     "date",
	fEmail:    "email",
	fUUID:     "uuid",
	fURI:      "uri",
}

func (f format) String() string { return formatNames[f] }

func formatByName(name string) format {
	for i, n := range formatNames {
		if n != "" && n == name {
			return format(i)
		}
	}
	return fNone
}

func (f format) check(s string) bool {
	switch f {
	case fDateTime:
		return isDateTime(s)
	case fDate:
		return len(s) == 10 && isDate(s)
	case fEmail:
		return isEmail(s)
	case fUUID:
		return isUUID(s)
	case fURI:
		return isURI(s)
	}
	return true
}

// digits parses s[i:i+n] as a decimal number, or returns -1.
func digits(s string, i, n int) int {
	if i+n > len(s) {
		return -1
	}
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// isDate checks an RFC 3339 full-date, YYYY-MM-DD, in s[:10].
func isDate(s string) bool {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, m, d := digits(s, 0, 4), digits(s, 5, 2), digits(s, 8, 2)
	if y < 0 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// isDateTime checks an RFC 3339 date-time: full-date "T" HH:MM:SS[.frac] (Z | ±HH:MM).
// T and Z may be lower case; a leap second (:60) is accepted.
func isDateTime(s string) bool {
	if len(s) < 20 || !isDate(s) || (s[10] != 'T' && s[10] != 't') {
		return false
	}
	if sec := digits(s, 17, 2); !isTime(s, 11) || s[16] != ':' || sec < 0 || sec > 60 {
		return false
	}
	i := 19
	if s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start || i == len(s) {
			return false
		}
	}
	switch s[i] {
	case 'Z', 'z':
		return i+1 == len(s)
	case '+', '-':
		return i+6 == len(s) && isTime(s, i+1)
	}
	return false
}

// isTime checks HH:MM at s[i:].
func isTime(s string, i int) bool {
	if i+5 > len(s) || s[i+2] != ':' {
		return false
	}
	h, m := digits(s, i, 2), digits(s, i+3, 2)
	return h >= 0 && h <= 23 && m >= 0 && m <= 59
}

// isUUID checks the hyphenated 8-4-4-4-12 hex form, any case.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isEmail checks an RFC 5321 mailbox in its common form: a dot-atom local
// part of at most 64 bytes, "@", and a host name. Quoted local parts and
// address literals are not accepted.
func isEmail(s string) bool {
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at > 64 {
		return false
	}
	local := s[:at]
	if local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	for i := 0; i < len(local); i++ {
		c := local[i]
		if !isAlpha(c) && !isDigit(c) && !strings.ContainsRune("!#$%&'*+-/=?^_`{|}~.", rune(c)) {
			return false
		}
	}
	return isHostname(s[at+1:])
}

// isHostname checks dot-separated labels of letters, digits and inner hyphens.
func isHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for h != "" {
		label := h
		if dot := strings.IndexByte(h, '.'); dot >= 0 {
			label, h = h[:dot], h[dot+1:]
			if h == "" {
				return false // trailing dot
			}
		} else {
			h = ""
		}
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isAlpha(c) && !isDigit(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

// isURI checks an RFC 3986 absolute URI: a scheme, ":", then only URI
// characters, with well-formed percent escapes and at most one "#".
func isURI(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 1 || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < colon; i++ {
		if c := s[i]; !isAlpha(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	hashes := 0
	for i := colon + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c) || isDigit(c) || strings.IndexByte("-._~:/?[]@!$&'()*+,;=", c) >= 0:
		case c == '#':
			if hashes++; hashes > 1 {
				return false
			}
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}
