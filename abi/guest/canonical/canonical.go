// Package canonical is the canonical JSON form Warden digests: what the
// host's digest function hashes and what a guest writes when it needs the
// same bytes (an idempotency key, an evidence locator, a comparison of two
// JSON values). Host and guests use this one implementation, so a digest a
// guard computes locally equals the one the host computes for the same value.
//
// The form is RFC 8785's (JSON Canonicalization Scheme), with one rule of
// Warden's for numbers: see JSON.
package canonical

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrNotJSON is returned by Canonical for input that is not one well-formed
// JSON value (RFC 8259 grammar, valid UTF-8, no lone surrogate escapes).
var ErrNotJSON = errors.New("canonical: not well-formed JSON")

// Canonical returns the canonical form of raw (see JSON), or ErrNotJSON.
// Leading and trailing whitespace is allowed.
func Canonical(raw []byte) ([]byte, error) {
	p := parsers.Get().(*canonParser)
	defer p.release()
	out := make([]byte, 0, len(raw)+16)
	if o, ok := p.direct(string(raw), out); ok {
		return o, nil
	}
	p.reset()
	if !p.parse(string(raw)) {
		return nil, ErrNotJSON
	}
	return p.emit(out), nil
}

// JSON returns a JSON value in canonical form, RFC 8785's: object keys
// sorted by their UTF-16 code units (of equal keys the last wins), no
// insignificant whitespace, strings written with the fewest escapes (\",
// \\, \b, \f, \n, \r, \t, \u00xx for other control characters, every
// other character as itself), numbers as ECMAScript prints a float64 — when
// that is the number's value. A number a float64 would round (the literal is
// not the shortest decimal its nearest float64 is printed as, e.g.
// 12345678901234567) keeps its exact value instead, written as its digits
// ("12345678901234567", "1e400" as a 1 and 400 zeros) or, past 400 trailing
// zeros or after the point, as significant digits and an exponent
// ("123456789012345678901e-1"); so two different numbers never share a form,
// which RFC 8785's float64 rounding would give them. A missing value is
// "null".
//
// Input that is not well-formed (gjson is lenient) gives '!' followed by the
// raw text Go-quoted; no canonical form of a value starts with '!', so it
// collides with none. Time is linear in the input (plus sorting each
// object's keys); nesting costs neither time nor Go stack.
func JSON(v gjson.Result) []byte {
	out := make([]byte, 0, len(v.Raw)+16)
	if !v.Exists() {
		return append(out, "null"...)
	}
	if v.Raw == "" {
		// A value made by hand rather than parsed.
		switch v.Type {
		case gjson.String:
			if utf8.ValidString(v.Str) {
				return appendString(out, v.Str)
			}
		case gjson.Number:
			if !math.IsInf(v.Num, 0) && !math.IsNaN(v.Num) {
				return appendES6(out, v.Num)
			}
		case gjson.True:
			return append(out, "true"...)
		case gjson.False:
			return append(out, "false"...)
		case gjson.Null:
			return append(out, "null"...)
		}
		return append(out, '!')
	}
	p := parsers.Get().(*canonParser)
	defer p.release()
	if o, ok := p.direct(v.Raw, out); ok {
		return o
	}
	p.reset()
	if p.parse(v.Raw) {
		return p.emit(out)
	}
	return strconv.AppendQuote(append(out, '!'), v.Raw)
}

const (
	kindObject uint8 = iota
	kindArray
	kindString // text holds the decoded string
	kindNumber // text holds the token as written
	kindRaw    // text holds the token as written (true, false, null)
)

// cnode is one value of the parsed input. It holds no pointers, so that the
// garbage collector need not scan a deep input's nodes.
type cnode struct {
	key        span  // decoded member key, for an object's members
	text       span  // scalars: see kindString, kindRaw
	start, end int32 // containers: their members in canonParser.kids
	kind       uint8
}

// span is a string: raw[s:e], or decoded[-s-1] when s < 0.
type span struct{ s, e int32 }

// cframe is an open container while parsing.
type cframe struct {
	node int32 // in canonParser.nodes
	base int32 // its first member in canonParser.pending
}

// canonParser parses well-formed JSON into a flat tree whose objects'
// members are sorted and deduplicated, then writes it out. Every input
// byte is looked at a bounded number of times, every node index moves from
// pending to kids once. direct, the usual path, writes the form in one
// pass instead and gives way to the tree.
type canonParser struct {
	raw     string
	decoded []string // strings with escapes, decoded
	nodes   []cnode
	kids    []int32 // members of closed containers, each container's range contiguous
	pending []int32 // members of open containers
	stack   []cframe
	// direct's state
	open    []dframe
	members []dmember
	moved   []byte
	budget  int
}

var parsers = sync.Pool{New: func() any { return new(canonParser) }}

// release returns p to the pool without keeping references to the input,
// and drops it if one large input made it big.
func (p *canonParser) release() {
	if cap(p.nodes) > 1<<16 || cap(p.members) > 1<<16 || cap(p.moved) > 1<<20 {
		return
	}
	p.raw = ""
	p.reset()
	parsers.Put(p)
}

// reset empties p of what a pass left, for another pass.
func (p *canonParser) reset() {
	clear(p.decoded)
	clear(p.members) // their keys may be decoded strings
	p.decoded = p.decoded[:0]
	p.nodes, p.kids, p.pending, p.stack = p.nodes[:0], p.kids[:0], p.pending[:0], p.stack[:0]
	p.open, p.members, p.moved = p.open[:0], p.members[:0], p.moved[:0]
}

func skipWS(raw string, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// parse reports whether raw is one well-formed JSON value followed by
// nothing but whitespace, and if so leaves its tree in p with the root at 0.
func (p *canonParser) parse(raw string) bool {
	if int64(len(raw)) >= 1<<31-1 {
		return false
	}
	p.raw = raw
	var key span // the key of the next value, inside an object
	i := 0
	for {
		i = skipWS(raw, i)
		if i >= len(raw) {
			return false
		}
		n := int32(len(p.nodes))
		c := raw[i]
		if c == '{' || c == '[' {
			kind, closer := kindArray, byte(']')
			if c == '{' {
				kind, closer = kindObject, '}'
			}
			p.nodes = append(p.nodes, cnode{key: key, kind: kind})
			p.stack = append(p.stack, cframe{node: n, base: int32(len(p.pending))})
			i = skipWS(raw, i+1)
			if i >= len(raw) || raw[i] != closer {
				if kind == kindObject {
					var ok bool
					if key, i, ok = p.memberKey(i); !ok {
						return false
					}
				} else {
					key = span{}
				}
				continue
			}
			i++
			n = p.close()
		} else {
			end, text, kind, ok := p.scalar(i)
			if !ok {
				return false
			}
			p.nodes = append(p.nodes, cnode{key: key, text: text, kind: kind})
			i = end
		}
		// A value ended; n is its node.
		for {
			if len(p.stack) == 0 {
				return skipWS(raw, i) == len(raw)
			}
			p.pending = append(p.pending, n)
			i = skipWS(raw, i)
			if i >= len(raw) {
				return false
			}
			obj := p.nodes[p.stack[len(p.stack)-1].node].kind == kindObject
			if raw[i] == ',' {
				if obj {
					var ok bool
					if key, i, ok = p.memberKey(skipWS(raw, i+1)); !ok {
						return false
					}
				} else {
					key, i = span{}, i+1
				}
				break
			}
			if (obj && raw[i] == '}') || (!obj && raw[i] == ']') {
				i++
				n = p.close()
				continue
			}
			return false
		}
	}
}

// close ends the innermost open container and returns its node. An object's
// members are sorted stably by key and, of equal keys, only the last is kept.
func (p *canonParser) close() int32 {
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	start := len(p.kids)
	p.kids = append(p.kids, p.pending[f.base:]...)
	p.pending = p.pending[:f.base]
	node := &p.nodes[f.node]
	if node.kind == kindObject {
		m := p.kids[start:]
		slices.SortStableFunc(m, func(a, b int32) int { return compareUTF16(p.str(p.nodes[a].key), p.str(p.nodes[b].key)) })
		w := 0
		for j, k := range m {
			if j+1 < len(m) && p.str(p.nodes[m[j+1]].key) == p.str(p.nodes[k].key) {
				continue
			}
			m[w] = k
			w++
		}
		p.kids = p.kids[:start+w]
	}
	node.start, node.end = int32(start), int32(len(p.kids))
	return f.node
}

// emit writes the tree rooted at node 0.
func (p *canonParser) emit(out []byte) []byte {
	type open struct{ node, next int32 }
	openers := [...]byte{kindObject: '{', kindArray: '['}
	closers := [...]byte{kindObject: '}', kindArray: ']'}
	if k := p.nodes[0].kind; k != kindObject && k != kindArray {
		return p.scalarOut(out, &p.nodes[0])
	}
	stack := make([]open, 0, min(len(p.stack)+16, 64))
	out = append(out, openers[p.nodes[0].kind])
	stack = append(stack, open{0, p.nodes[0].start})
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		parent := &p.nodes[top.node]
		if top.next == parent.end {
			out = append(out, closers[parent.kind])
			stack = stack[:len(stack)-1]
			continue
		}
		if top.next > parent.start {
			out = append(out, ',')
		}
		child := &p.nodes[p.kids[top.next]]
		top.next++
		if parent.kind == kindObject {
			out = appendString(out, p.str(child.key))
			out = append(out, ':')
		}
		switch child.kind {
		case kindObject, kindArray:
			out = append(out, openers[child.kind])
			stack = append(stack, open{p.kids[top.next-1], child.start})
		default:
			out = p.scalarOut(out, child)
		}
	}
	return out
}

func (p *canonParser) scalarOut(out []byte, n *cnode) []byte {
	switch n.kind {
	case kindString:
		return appendString(out, p.str(n.text))
	case kindNumber:
		return appendNumber(out, p.str(n.text))
	}
	return append(out, p.str(n.text)...)
}

// appendString writes s, valid UTF-8, as RFC 8785 does: '"' and '\\'
// escaped, the control characters U+0000 to U+001F as \b, \t, \n, \f, \r
// or \u00xx (lower-case hex), every other character as itself.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\t':
			out = append(out, '\\', 't')
		case '\n':
			out = append(out, '\\', 'n')
		case '\f':
			out = append(out, '\\', 'f')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 sorts keys. That is their byte order except where one has a
// character from U+E000 to U+FFFF and the other, at the same place, one
// past U+FFFF (a surrogate pair, which sorts first).
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if ua, ub := firstUnit(ra), firstUnit(rb); ua != ub {
		return int(ua) - int(ub)
	}
	return int(ra) - int(rb)
}

func firstUnit(r rune) rune {
	if r > 0xffff {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

// appendNumber writes the number literal lit (JSON grammar): as ECMAScript
// prints its nearest float64 when that print is lit's value, else its exact
// value (see JSON).
func appendNumber(out []byte, lit string) []byte {
	if digits := strings.TrimPrefix(lit, "-"); len(digits) <= 15 && lit != "-0" && !strings.ContainsAny(digits, ".eE") {
		return append(out, lit...) // an integer float64 holds, printed as written
	}
	exact := exactDecimal(lit)
	if f, err := strconv.ParseFloat(lit, 64); err == nil {
		mark := len(out)
		out = appendES6(out, f)
		if exact == exactDecimal(string(out[mark:])) {
			return out
		}
		out = out[:mark]
	}
	return append(out, exact...)
}

// appendES6 writes a finite f as ECMAScript's Number::toString does (RFC
// 8785 section 3.2.2.3): the shortest digits that read back as f, in plain
// notation from 1e-6 up to 1e21 and in exponent notation ("1e+21",
// "1.5e-7") outside it; -0 is "0".
func appendES6(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0')
	}
	if f < 0 {
		out = append(out, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±xx
	i := slices.Index(e, 'e')
	exp, _ := strconv.Atoi(string(e[i+1:]))
	var dbuf [24]byte
	digits := dbuf[:0]
	for _, c := range e[:i] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	k, n := len(digits), exp+1 // f = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		for range n - k {
			out = append(out, '0')
		}
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		out = append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for range -n {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10)
	}
	return out
}

// exactDecimal is a number literal's exact value in a form that equal values
// share and no other does: an integer's digits (up to 400 trailing zeros),
// else the significant digits and an exponent ("15e-1" for 1.50); zero is
// "0". A non-zero number with an exponent past ±2^40 keeps its literal (so
// 1e9999999999999 and 10e9999999999998 differ; no float64 is near either).
// Linear in the literal's length.
func exactDecimal(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	body := strings.TrimPrefix(lit, "-")
	mant, exp := body, 0
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mant = body[:i]
		if strings.Trim(mant, "0.") == "" {
			return "0"
		}
		e, err := strconv.Atoi(strings.TrimPrefix(body[i+1:], "+"))
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return lit
		}
		exp = e
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	mant = strings.TrimLeft(mant, "0")
	trimmed := strings.TrimRight(mant, "0")
	exp += len(mant) - len(trimmed)
	mant = trimmed
	if mant == "" {
		return "0"
	}
	sign := ""
	if neg {
		sign = "-"
	}
	if exp >= 0 && exp <= 400 {
		return sign + mant + strings.Repeat("0", exp)
	}
	return sign + mant + "e" + strconv.Itoa(exp)
}

// memberKey reads `"key" :` at i and returns the decoded key and the index
// after the colon.
func (p *canonParser) memberKey(i int) (span, int, bool) {
	raw := p.raw
	if i >= len(raw) || raw[i] != '"' {
		return span{}, i, false
	}
	end, key, ok := p.stringToken(i)
	if !ok {
		return span{}, i, false
	}
	i = skipWS(raw, end)
	if i >= len(raw) || raw[i] != ':' {
		return span{}, i, false
	}
	return key, i + 1, true
}

func (p *canonParser) str(s span) string {
	if s.s < 0 {
		return p.decoded[-s.s-1]
	}
	return p.raw[s.s:s.e]
}

// scalar reads a string, number or literal at i.
func (p *canonParser) scalar(i int) (end int, text span, kind uint8, ok bool) {
	raw := p.raw
	switch c := raw[i]; {
	case c == '"':
		end, text, ok = p.stringToken(i)
		return end, text, kindString, ok
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok = numberToken(raw, i)
		return end, span{int32(i), int32(end)}, kindNumber, ok
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if strings.HasPrefix(raw[i:], lit) {
			return i + len(lit), span{int32(i), int32(i + len(lit))}, kindRaw, true
		}
	}
	return i, span{}, 0, false
}

// stringToken reads the string token at raw[i] == '"' and returns the index
// after it and its value: escapes decoded, a surrogate pair to its
// character. Invalid UTF-8, a raw control character or a lone surrogate
// escape is not well-formed.
func (p *canonParser) stringToken(i int) (int, span, bool) {
	raw := p.raw
	j := i + 1
	for j < len(raw) {
		c := raw[j]
		switch {
		case c == '"':
			return j + 1, span{int32(i + 1), int32(j)}, true
		case c == '\\':
			return p.escapedString(i, j)
		case c < 0x20:
			return 0, span{}, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRuneInString(raw[j:])
			if r == utf8.RuneError && size == 1 {
				return 0, span{}, false
			}
			j += size
		}
	}
	return 0, span{}, false
}

// escapedString goes on with stringToken from the first backslash, at j,
// decoding into a new string.
func (p *canonParser) escapedString(i, j int) (int, span, bool) {
	raw := p.raw
	buf := []byte(raw[i+1 : j])
	for j < len(raw) {
		c := raw[j]
		switch {
		case c == '"':
			p.decoded = append(p.decoded, string(buf))
			return j + 1, span{int32(-len(p.decoded)), 0}, true
		case c == '\\':
			if j+1 >= len(raw) {
				return 0, span{}, false
			}
			j += 2
			switch raw[j-1] {
			case '"', '\\', '/':
				buf = append(buf, raw[j-1])
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(raw, j)
				if !ok {
					return 0, span{}, false
				}
				j += 4
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || j+1 >= len(raw) || raw[j] != '\\' || raw[j+1] != 'u' {
						return 0, span{}, false
					}
					lo, ok := hex4(raw, j+2)
					if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
						return 0, span{}, false
					}
					j += 6
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return 0, span{}, false
			}
		case c < 0x20:
			return 0, span{}, false
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			j++
		default:
			r, size := utf8.DecodeRuneInString(raw[j:])
			if r == utf8.RuneError && size == 1 {
				return 0, span{}, false
			}
			buf = append(buf, raw[j:j+size]...)
			j += size
		}
	}
	return 0, span{}, false
}

// hex4 reads four hex digits at raw[j].
func hex4(raw string, j int) (rune, bool) {
	if j+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, h := range []byte(raw[j : j+4]) {
		switch {
		case h >= '0' && h <= '9':
			r = r<<4 | rune(h-'0')
		case h >= 'a' && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case h >= 'A' && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// numberToken reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func numberToken(raw string, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		return j
	}
	if raw[i] == '-' {
		i++
	}
	switch {
	case i < len(raw) && raw[i] == '0':
		i++
	case i < len(raw) && raw[i] >= '1' && raw[i] <= '9':
		i = digits(i)
	default:
		return i, false
	}
	if i < len(raw) && raw[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
