package abi

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/agentwarden/warden/internal/wordscan"
)

// scanJSON checks data in one pass: whether it is valid JSON exactly as
// json.Valid judges it (same grammar, invalid UTF-8 inside strings
// accepted, at most maxDepth nested containers), whether some object holds
// a key twice (keys compared after unescaping, as the decoders see them),
// and whether the document is an object. It replaces json.Valid followed by
// hasDuplicateKey, the check every result and effect of a plugin goes
// through: no allocation unless a key is escaped or an object is large.
func scanJSON(data []byte) (valid, dup, object bool) {
	keys := scanKeys.Get().(*[][]byte)
	s := validScanner{dupScanner: dupScanner{data: data, keys: (*keys)[:0]}}
	defer func() {
		if cap(s.keys) > 1024 {
			return // a deep document's stack is not kept
		}
		clear(s.keys[:s.high]) // the keys point into data
		*keys = s.keys[:0]
		scanKeys.Put(keys)
	}()
	s.ws()
	if s.i < len(data) && data[s.i] == '{' {
		object = true
	}
	if !s.value(0) {
		return false, false, false
	}
	s.ws()
	if s.i != len(data) {
		return false, false, false
	}
	return true, s.dup, object
}

// scanLinearKeys is how many keys of one object the one-pass scan compares
// pairwise before a map takes over: more than linearKeys, because an
// evidence item's object has 17 members and a map for it cost more than
// the comparisons (at most 31 short ones per key).
const scanLinearKeys = 32

// scanKeys are the scanners' key stacks, kept for the next scan: every
// result and effect is scanned, and growing a fresh stack for each was most
// of what a scan allocated.
var scanKeys = sync.Pool{New: func() any { k := make([][]byte, 0, 64); return &k }}

// ValidJSON reports whether data is valid JSON exactly as json.Valid
// judges it, in one pass of the scanner every result and effect of a
// plugin goes through (several times faster than json.Valid).
func ValidJSON(data []byte) bool {
	valid, _, _ := scanJSON(data)
	return valid
}

// maxDepth is encoding/json's bound on nesting: a document nested deeper is
// not valid to json.Valid.
const maxDepth = 10000

// validScanner validates while it looks for duplicate keys; once one is
// found it only validates the rest.
type validScanner struct {
	dupScanner
	dup  bool
	high int // the most keys s.keys held: what a scan leaves to clear
}

// value scans one value at s.i (after whitespace); false when it is not
// valid JSON.
func (s *validScanner) value(depth int) bool {
	s.ws()
	if s.i >= len(s.data) {
		return false
	}
	switch c := s.data[s.i]; c {
	case '{':
		if depth >= maxDepth {
			return false
		}
		return s.object(depth + 1)
	case '[':
		if depth >= maxDepth {
			return false
		}
		s.i++
		s.ws()
		if s.i < len(s.data) && s.data[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.i >= len(s.data) {
				return false
			}
			switch s.data[s.i] {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case '"':
		_, _, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.number()
		}
		return false
	}
}

func (s *validScanner) literal(lit string) bool {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *validScanner) number() bool {
	d := s.data
	if d[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(d):
		return false
	case d[s.i] == '0':
		s.i++
	case d[s.i] >= '1' && d[s.i] <= '9':
		s.i++
		s.digits()
	default:
		return false
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *validScanner) digits() int {
	start := s.i
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// str scans a string at s.i: its raw content, whether it holds an escape,
// and whether it is valid (closed, escapes well formed, no control byte).
func (s *validScanner) str() ([]byte, bool, bool) {
	s.i++ // '"'
	d := s.data
	start, esc := s.i, false
	for s.i < len(d) {
		if s.i+8 <= len(d) && wordscan.Plain(wordscan.WordOf(d, s.i)) {
			s.i += 8 // eight plain ASCII bytes
			continue
		}
		c := d[s.i]
		if plainStringByte[c] {
			s.i++
			continue
		}
		switch {
		case c == '"':
			b := d[start:s.i]
			s.i++
			return b, esc, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			esc = true
			s.i++
			if s.i >= len(d) {
				return nil, false, false
			}
			switch d[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(d)-s.i < 5 {
					return nil, false, false
				}
				for _, h := range d[s.i+1 : s.i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		default:
			s.i++
		}
	}
	return nil, false, false
}

// plainStringByte are the bytes a string holds as they are: not '"', '\\'
// or a control byte.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// object scans an object at s.i; depth counts it.
func (s *validScanner) object(depth int) bool {
	s.i++ // '{'
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	var seen map[string]struct{}
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return false
		}
		keyStart := s.i
		key, esc, ok := s.str()
		if !ok {
			return false
		}
		if !s.dup {
			if esc {
				var k string
				if json.Unmarshal(s.data[keyStart:s.i], &k) == nil {
					key = []byte(k)
				}
			}
			switch n := len(s.keys) - base; {
			case seen != nil:
				if _, d := seen[string(key)]; d {
					s.dup = true
				}
				seen[string(key)] = struct{}{}
			case n < scanLinearKeys:
				for _, k := range s.keys[base:] {
					if bytes.Equal(k, key) {
						s.dup = true
						break
					}
				}
				s.keys = append(s.keys, key)
				s.high = max(s.high, len(s.keys))
			default:
				seen = make(map[string]struct{}, 2*n)
				for _, k := range s.keys[base:] {
					seen[string(k)] = struct{}{}
				}
				if _, d := seen[string(key)]; d {
					s.dup = true
				}
				seen[string(key)] = struct{}{}
			}
		}
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return false
		}
		s.i++
		if !s.value(depth) {
			return false
		}
		s.ws()
		if s.i >= len(s.data) {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}
