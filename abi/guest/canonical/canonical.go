// Package canonical is the canonical JSON form Warden digests: what the
// host's digest function hashes and what a guest writes when it needs the
// same bytes (an evidence locator, a comparison of two JSON values). Host
// and guests use this one implementation, so a digest a guard computes
// locally equals the one the host computes for the same value.
package canonical

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// JSON returns a JSON value in canonical form: object keys sorted
// (later duplicates win), no insignificant whitespace, strings re-encoded,
// numbers as written. A missing value is "null".
//
// Its output is persisted (fingerprints, idempotency digests), so it is
// byte-for-byte what the original recursive implementation produced, in time
// linear in the input (plus sorting each object's keys):
//
//   - well-formed JSON (RFC 8259 grammar; trailing whitespace allowed) is
//     canonicalised in one pass over v.Raw with an explicit stack, so neither
//     time nor Go stack grows with the square of the nesting depth;
//   - input that is not well-formed (gjson is lenient, and JSON gets
//     whatever gjson gave) keeps the original, lenient result as long as that
//     needs at most legacyMaxDepth nested levels, which bounds its cost;
//   - deeper malformed input gives '!' followed by the raw text quoted as a
//     JSON string. No valid value's canonical form, and no lenient result of
//     an object or array, starts with '!', so it cannot collide with either.
func JSON(v gjson.Result) []byte {
	out := make([]byte, 0, len(v.Raw)+16)
	switch {
	case !v.Exists():
		return append(out, "null"...)
	case v.IsObject() || v.IsArray():
		p := parsers.Get().(*canonParser)
		defer p.release()
		if p.parse(v.Raw) {
			return p.emit(out)
		}
		if lenient, ok := legacyCanonical(out, v, 0); ok {
			return lenient
		}
		return strconv.AppendQuote(append(out[:0], '!'), v.Raw)
	case v.Type == gjson.String:
		return strconv.AppendQuote(out, v.Str)
	default:
		return append(out, v.Raw...)
	}
}

// legacyMaxDepth bounds the nesting the lenient fallback may recurse into.
// Each level costs one scan of the input, so the fallback is at most
// legacyMaxDepth+1 scans.
const legacyMaxDepth = 64

const (
	kindObject uint8 = iota
	kindArray
	kindString // text holds the decoded string
	kindRaw    // text holds the token as written (number, true, false, null)
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
// members are sorted and deduplicated, then writes it out. Every input byte
// is looked at a bounded number of times, every node index moves from
// pending to kids once.
type canonParser struct {
	raw     string
	decoded []string // strings with escapes, decoded
	nodes   []cnode
	kids    []int32 // members of closed containers, each container's range contiguous
	pending []int32 // members of open containers
	stack   []cframe
}

var parsers = sync.Pool{New: func() any { return new(canonParser) }}

// release returns p to the pool without keeping references to the input,
// and drops it if one large input made it big.
func (p *canonParser) release() {
	if cap(p.nodes) > 1<<16 {
		return
	}
	clear(p.decoded)
	p.raw, p.decoded = "", p.decoded[:0]
	p.nodes, p.kids, p.pending, p.stack = p.nodes[:0], p.kids[:0], p.pending[:0], p.stack[:0]
	parsers.Put(p)
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
		slices.SortStableFunc(m, func(a, b int32) int { return strings.Compare(p.str(p.nodes[a].key), p.str(p.nodes[b].key)) })
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
	stack := make([]open, 0, min(len(p.stack)+16, 64))
	openers := [...]byte{kindObject: '{', kindArray: '['}
	closers := [...]byte{kindObject: '}', kindArray: ']'}
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
			out = appendQuote(out, p.str(child.key))
			out = append(out, ':')
		}
		switch child.kind {
		case kindObject, kindArray:
			out = append(out, openers[child.kind])
			stack = append(stack, open{p.kids[top.next-1], child.start})
		case kindString:
			out = appendQuote(out, p.str(child.text))
		default:
			out = append(out, p.str(child.text)...)
		}
	}
	return out
}

// appendQuote is strconv.AppendQuote, without its per-rune work for the
// common string of printable ASCII only, which it quotes as it is.
func appendQuote(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.AppendQuote(out, s)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
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
		return end, span{int32(i), int32(end)}, kindRaw, ok
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if strings.HasPrefix(raw[i:], lit) {
			return i + len(lit), span{int32(i), int32(i + len(lit))}, kindRaw, true
		}
	}
	return i, span{}, 0, false
}

// stringToken reads the string token at raw[i] == '"' and returns the index
// after it and its value, decoded by gjson so that escapes (surrogates
// included) decode exactly as they always have.
func (p *canonParser) stringToken(i int) (int, span, bool) {
	raw := p.raw
	escaped := false
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			if !escaped {
				return j + 1, span{int32(i + 1), int32(j)}, true
			}
			p.decoded = append(p.decoded, gjson.Parse(raw[i:j+1]).Str)
			return j + 1, span{int32(-len(p.decoded)), 0}, true
		case c == '\\':
			escaped = true
			j++
			if j >= len(raw) {
				return 0, span{}, false
			}
			switch raw[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(raw) {
					return 0, span{}, false
				}
				for _, h := range []byte(raw[j+1 : j+5]) {
					if !isHex(h) {
						return 0, span{}, false
					}
				}
				j += 4
			default:
				return 0, span{}, false
			}
		case c < 0x20:
			return 0, span{}, false
		}
	}
	return 0, span{}, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
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

type member struct {
	k string
	v gjson.Result
}

// legacyCanonical is the original implementation, kept for input that is not
// well-formed JSON, where gjson's leniency decides what the members are. It
// gives up (false) deeper than legacyMaxDepth, which keeps its cost — one
// scan of the input per level, since gjson re-scans each nested value to find
// its end — linear.
func legacyCanonical(out []byte, v gjson.Result, depth int) ([]byte, bool) {
	switch {
	case !v.Exists():
		return append(out, "null"...), true
	case v.IsObject():
		if depth >= legacyMaxDepth {
			return out, false
		}
		var fields []member
		v.ForEach(func(k, val gjson.Result) bool {
			fields = append(fields, member{k.Str, val})
			return true
		})
		// Sort by key, later duplicates after earlier ones, and keep the last.
		sort.SliceStable(fields, func(i, j int) bool { return fields[i].k < fields[j].k })
		out = append(out, '{')
		first := true
		for i, f := range fields {
			if i+1 < len(fields) && fields[i+1].k == f.k {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = strconv.AppendQuote(out, f.k)
			out = append(out, ':')
			var ok bool
			if out, ok = legacyCanonical(out, f.v, depth+1); !ok {
				return out, false
			}
		}
		return append(out, '}'), true
	case v.IsArray():
		if depth >= legacyMaxDepth {
			return out, false
		}
		out = append(out, '[')
		i, ok := 0, true
		v.ForEach(func(_, val gjson.Result) bool {
			if i > 0 {
				out = append(out, ',')
			}
			out, ok = legacyCanonical(out, val, depth+1)
			i++
			return ok
		})
		return append(out, ']'), ok
	case v.Type == gjson.String:
		return strconv.AppendQuote(out, v.Str), true
	default:
		return append(out, v.Raw...), true
	}
}
