package canonical

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/wordscan"
)

// direct writes the canonical form of raw in one pass, without the tree
// parse builds: each value is written as it is read, and an object whose
// members are not in key order has its members' written bytes moved into
// order when it closes (its nested values are written, and ordered,
// already). A string without an escape, and an integer a float64 holds,
// are their own canonical form, so their bytes are copied. ok is false for
// input that is not well-formed, with out holding a partial write; the
// caller then takes parse's path, which says so. So does direct on objects
// nested so deep, each out of order, that moving their bytes again and
// again would cost more than a few times the input: parse's tree takes
// those in linear time. Nesting costs no Go stack.
func (p *canonParser) direct(raw string, out []byte) ([]byte, bool) {
	if int64(len(raw)) >= 1<<31-1 {
		return out, false
	}
	p.raw = raw
	p.budget = 4*len(raw) + 4096
	i := 0
	for {
		// a value at i
		i = skipWS(raw, i)
		if i >= len(raw) {
			return out, false
		}
		switch c := raw[i]; {
		case c == '{' || c == '[':
			out = append(out, c)
			p.open = append(p.open, dframe{obj: c == '{', base: int32(len(p.members)), start: int32(len(out))})
			i = skipWS(raw, i+1)
			if i < len(raw) && raw[i] == c+2 { // '}' and ']' are 2 past '{' and '['
				p.open = p.open[:len(p.open)-1]
				out = append(out, c+2)
				i++
				break
			}
			if c == '{' {
				var ok bool
				if out, i, ok = p.directKey(out, i); !ok {
					return out, false
				}
			}
			continue
		case c == '"':
			end, s, ok := p.directString(i)
			if !ok {
				return out, false
			}
			if s.s >= 0 {
				out = append(out, raw[i:end]...)
			} else {
				out = appendString(out, p.str(s))
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := numberToken(raw, i)
			if !ok {
				return out, false
			}
			out = appendNumber(out, raw[i:end])
			i = end
		case strings.HasPrefix(raw[i:], "true"), strings.HasPrefix(raw[i:], "null"):
			out = append(out, raw[i:i+4]...)
			i += 4
		case strings.HasPrefix(raw[i:], "false"):
			out = append(out, "false"...)
			i += 5
		default:
			return out, false
		}
		// a value ended at i
		for {
			if len(p.open) == 0 {
				return out, skipWS(raw, i) == len(raw)
			}
			f := &p.open[len(p.open)-1]
			if f.obj {
				p.members[len(p.members)-1].to = int32(len(out))
			}
			if i = skipWS(raw, i); i >= len(raw) {
				return out, false
			}
			if raw[i] == ',' {
				out = append(out, ',')
				if f.obj {
					var ok bool
					if out, i, ok = p.directKey(out, skipWS(raw, i+1)); !ok {
						return out, false
					}
				} else {
					i++
				}
				break
			}
			switch {
			case f.obj && raw[i] == '}':
				var ok bool
				if out, ok = p.order(out, f); !ok {
					return out, false
				}
			case f.obj || raw[i] != ']':
				return out, false
			}
			out = append(out, raw[i])
			i++
			p.open = p.open[:len(p.open)-1]
		}
	}
}

// dframe is a container open in direct: whether it is an object, its
// first member in canonParser.members and where its members start in out.
type dframe struct {
	obj   bool
	base  int32
	start int32
}

// dmember is a member of an object open in direct: its decoded key and
// the written bytes of `"key":value`, out[from:to].
type dmember struct {
	key      string
	from, to int32
}

// directString reads the string at raw[i] == '"' as stringToken does:
// the index after it and its value. A string of plain text (no escape,
// no control character, valid UTF-8) is found by its closing quote and
// one look at its bytes; any other goes to stringToken.
func (p *canonParser) directString(i int) (int, span, bool) {
	raw := p.raw
	n := strings.IndexByte(raw[i+1:], '"')
	if n < 0 {
		return 0, span{}, false
	}
	s := raw[i+1 : i+1+n]
	ascii := true
	k := 0
	for k+8 <= len(s) && wordscan.Plain(wordscan.Word(s, k)) {
		k += 8 // eight plain ASCII bytes
	}
	for ; k < len(s); k++ {
		if c := s[k]; c < 0x20 || c == '\\' {
			return p.stringToken(i)
		} else if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.ValidString(s) {
		return 0, span{}, false
	}
	return i + 2 + n, span{int32(i + 1), int32(i + 1 + n)}, true
}

// directKey reads `"key" :` at i and writes it, starting a member.
func (p *canonParser) directKey(out []byte, i int) ([]byte, int, bool) {
	raw := p.raw
	if i >= len(raw) || raw[i] != '"' {
		return out, i, false
	}
	end, key, ok := p.directString(i)
	if !ok {
		return out, i, false
	}
	k := p.str(key)
	p.members = append(p.members, dmember{key: k, from: int32(len(out))})
	if key.s >= 0 {
		out = append(out, raw[i:end]...)
	} else {
		out = appendString(out, k)
	}
	if end = skipWS(raw, end); end >= len(raw) || raw[end] != ':' {
		return out, i, false
	}
	return append(out, ':'), end + 1, true
}

// order puts the members of the object f, written in out, in key order
// (RFC 8785's; of equal keys the last is kept); false when the bytes it
// has moved in this pass reach its budget.
func (p *canonParser) order(out []byte, f *dframe) ([]byte, bool) {
	m := p.members[f.base:]
	defer func() { p.members = p.members[:f.base] }()
	sorted := true
	for j := 1; j < len(m) && sorted; j++ {
		sorted = compareUTF16(m[j-1].key, m[j].key) < 0
	}
	if sorted {
		return out, true
	}
	if p.budget -= len(out) - int(f.start); p.budget < 0 {
		return out, false
	}
	if len(m) <= 16 {
		// a stable insertion sort: an object has few members, mostly in order
		for j := 1; j < len(m); j++ {
			for k := j; k > 0 && compareUTF16(m[k-1].key, m[k].key) > 0; k-- {
				m[k-1], m[k] = m[k], m[k-1]
			}
		}
	} else {
		slices.SortStableFunc(m, func(a, b dmember) int { return compareUTF16(a.key, b.key) })
	}
	p.moved = append(p.moved[:0], out[f.start:]...)
	out = out[:f.start]
	first := true
	for j, k := range m {
		if j+1 < len(m) && m[j+1].key == k.key {
			continue // a later member of the same key wins
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, p.moved[k.from-f.start:k.to-f.start]...)
	}
	return out, true
}
