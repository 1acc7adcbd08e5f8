package jsonschema

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	js "github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. Most tool schemas use a handful of keywords (type,
// properties, required, additionalProperties, items, bounds on lengths,
// counts and numbers, enums of strings, patterns, formats), and most
// documents a model sends are valid. For such a schema a compiled fast form
// reads the document's text once and answers "valid" without decoding it
// into Go values or running the library's validator. It only ever answers "valid" or "not
// sure": a document it does not accept, for any reason, goes through the
// full path (decode and the library), which also writes the errors. So the
// fast path changes no answer: it accepts a subset of what the full path
// accepts (FuzzFastAgrees), and the full path is what reports.
//
// A schema gets a fast form only when every keyword in it is one the fast
// form implements, exactly as the library does for the schema's draft;
// anything else ($ref, combinators, unknown keywords, bounds that are not
// integers) leaves the schema on the full path. Patterns and formats are
// checked by the library's own compiled pattern and format functions.

// Value types, as bits.
const (
	tNull uint8 = 1 << iota
	tBool
	tObject
	tArray
	tNumber
	tString
	tInteger // numbers that are integers
)

// fastNode is one subschema's fast form.
type fastNode struct {
	any       bool  // the schema true or {}: every value (still checked as the decoder would)
	types     uint8 // allowed types; 0: any
	props     map[string]*fastNode
	propList  []fastProp // props, when there are few: compared in turn, not hashed
	required  []string
	addl      *fastNode // additionalProperties as a schema; nil with addlFalse unset: any
	addlFalse bool
	items     *fastNode

	minItems, maxItems int // -1: none
	minLen, maxLen     int
	minProps, maxProps int

	// Integer bounds on numbers.
	min, max, exMin, exMax             int64
	hasMin, hasMax, hasExMin, hasExMax bool

	hasEnum bool
	enumStr []string // the enum's strings (const: one); a value of another type is left to the library

	pattern js.Regexp  // the library's compiled pattern
	format  *js.Format // the library's asserted format; nil for an unknown one
}

type fastProp struct {
	name string
	node *fastNode
}

// prop is the declared property name's subschema, if any.
func (n *fastNode) prop(name string) (*fastNode, bool) {
	if n.propList != nil || n.props == nil {
		for i := range n.propList {
			if n.propList[i].name == name {
				return n.propList[i].node, true
			}
		}
		return nil, false
	}
	p, ok := n.props[name]
	return p, ok
}

// Drafts whose meaning of the fast keywords is the same as 2020-12's.
var fastDrafts = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema":  true,
	"https://json-schema.org/draft/2020-12/schema#": true,
	"https://json-schema.org/draft/2019-09/schema":  true,
	"https://json-schema.org/draft/2019-09/schema#": true,
	"http://json-schema.org/draft-07/schema":        true,
	"http://json-schema.org/draft-07/schema#":       true,
}

// compileFast builds the fast form of a decoded schema that the library
// compiled, or nil when the schema uses anything the fast form does not
// implement.
func compileFast(doc any, sch *js.Schema) *fastNode {
	if m, ok := doc.(map[string]any); ok {
		if d, has := m["$schema"]; has {
			s, ok := d.(string)
			if !ok || !fastDrafts[s] {
				return nil
			}
		}
	}
	return fastSchema(doc, sch, true)
}

// annotations are keywords that assert nothing.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"readOnly": true, "writeOnly": true, "deprecated": true,
}

// fastSchema is the fast form of the subschema v, which the library
// compiled as sch.
func fastSchema(v any, sch *js.Schema, root bool) *fastNode {
	if sch == nil {
		return nil
	}
	n := &fastNode{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1, minProps: -1, maxProps: -1}
	switch v := v.(type) {
	case bool:
		if !v {
			return nil // false: every value fails, the full path reports
		}
		n.any = true
		return n
	case map[string]any:
		for k, x := range v {
			ok := true
			switch {
			case annotations[k]:
			case k == "$schema":
				ok = root
			case k == "type":
				n.types, ok = fastTypes(x)
			case k == "properties":
				ps, isMap := x.(map[string]any)
				ok = isMap
				n.props = make(map[string]*fastNode, len(ps))
				for name, p := range ps {
					if n.props[name] = fastSchema(p, sch.Properties[name], false); n.props[name] == nil {
						return nil
					}
				}
				if len(n.props) <= 16 {
					n.propList = make([]fastProp, 0, len(n.props))
					for name, p := range n.props {
						n.propList = append(n.propList, fastProp{name, p})
					}
				}
			case k == "required":
				list, isList := x.([]any)
				ok = isList
				for _, r := range list {
					s, isStr := r.(string)
					if !isStr {
						return nil
					}
					n.required = append(n.required, s)
				}
			case k == "additionalProperties":
				if b, isBool := x.(bool); isBool && !b {
					n.addlFalse = true
				} else if n.addl = fastSchema(x, asSchema(sch.AdditionalProperties), false); n.addl == nil {
					return nil
				}
			case k == "items":
				if _, isList := x.([]any); isList {
					return nil // draft 7's tuple form
				}
				items := sch.Items2020 // 2020-12's; earlier drafts' is Items
				if items == nil {
					items = asSchema(sch.Items)
				}
				if n.items = fastSchema(x, items, false); n.items == nil {
					return nil
				}
			case k == "minItems":
				n.minItems, ok = fastCount(x)
			case k == "maxItems":
				n.maxItems, ok = fastCount(x)
			case k == "minLength":
				n.minLen, ok = fastCount(x)
			case k == "maxLength":
				n.maxLen, ok = fastCount(x)
			case k == "minProperties":
				n.minProps, ok = fastCount(x)
			case k == "maxProperties":
				n.maxProps, ok = fastCount(x)
			case k == "minimum":
				n.min, ok = fastInt(x)
				n.hasMin = ok
			case k == "maximum":
				n.max, ok = fastInt(x)
				n.hasMax = ok
			case k == "exclusiveMinimum":
				n.exMin, ok = fastInt(x)
				n.hasExMin = ok
			case k == "exclusiveMaximum":
				n.exMax, ok = fastInt(x)
				n.hasExMax = ok
			case k == "enum", k == "const":
				if n.hasEnum {
					return nil // both: left to the library
				}
				list := []any{x}
				if k == "enum" {
					var isList bool
					if list, isList = x.([]any); !isList {
						return nil
					}
				}
				n.hasEnum = true
				for _, e := range list {
					if s, isStr := e.(string); isStr {
						n.enumStr = append(n.enumStr, s)
					}
				}
			case k == "pattern":
				n.pattern = sch.Pattern
				ok = n.pattern != nil
			case k == "format":
				// An unknown format asserts nothing (sch.Format nil);
				// "regex" may go to another engine.
				n.format = sch.Format
				ok = n.format == nil || n.format.Name != "regex"
			default:
				ok = false
			}
			if !ok {
				return nil
			}
		}
		if n.types == 0 && len(v) == 0 {
			n.any = true
		}
		return n
	}
	return nil
}

func asSchema(x any) *js.Schema {
	s, _ := x.(*js.Schema)
	return s
}

func fastTypes(x any) (uint8, bool) {
	one := func(s any) uint8 {
		switch s {
		case "null":
			return tNull
		case "boolean":
			return tBool
		case "object":
			return tObject
		case "array":
			return tArray
		case "number":
			return tNumber
		case "string":
			return tString
		case "integer":
			return tInteger
		}
		return 0
	}
	if list, ok := x.([]any); ok {
		var t uint8
		for _, s := range list {
			b := one(s)
			if b == 0 {
				return 0, false
			}
			t |= b
		}
		return t, t != 0
	}
	t := one(x)
	return t, t != 0
}

func fastCount(x any) (int, bool) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(string(n))
	return i, err == nil && i >= 0
}

func fastInt(x any) (int64, bool) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// validFast reports whether the fast form is sure doc is valid: JSON that
// gjson.Valid and the decoder accept (no repeated key, depth and numbers in
// bounds) and that matches the schema. false means "not sure", never
// "invalid". The document is read once, checking its syntax as gjson.Valid
// does while it is matched; a string with escapes where its value counts
// (a key, a string the schema constrains) is left to the full path.
func (n *fastNode) validFast(doc string) bool {
	sc := scanner{s: doc}
	sc.ws()
	if !sc.value(n, 0) {
		return false
	}
	sc.ws()
	return sc.i == len(sc.s)
}

// scanner reads one JSON document.
type scanner struct {
	s string
	i int
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value reads the value at sc.i, at depth (the containers above it), and
// matches it against n; n nil or n.any: any value the decoder accepts.
func (sc *scanner) value(n *fastNode, depth int) bool {
	if sc.i >= len(sc.s) {
		return false
	}
	if n != nil && n.any {
		n = nil
	}
	var t uint8
	switch c := sc.s[sc.i]; {
	case c == '{':
		return n.allows(tObject) && sc.object(n, depth)
	case c == '[':
		return n.allows(tArray) && sc.array(n, depth)
	case c == '"':
		v, escaped, ok := sc.str()
		if !ok || !n.allows(tString) {
			return false
		}
		if n == nil {
			return true
		}
		if escaped && (n.hasEnum || n.format != nil || n.pattern != nil || n.minLen >= 0 || n.maxLen >= 0) {
			return false // the decoded value counts: left to the full path
		}
		return n.str(v)
	case c == '-' || (c >= '0' && c <= '9'):
		lit, ok := sc.number()
		if !ok || !numberInRange(lit) {
			return false
		}
		t = tNumber
		if isIntLiteral(lit) {
			t |= tInteger
		}
		if n == nil {
			return true
		}
		return n.allows(t) && !n.hasEnum && n.format == nil && n.numberHolds(lit)
	case strings.HasPrefix(sc.s[sc.i:], "true"):
		sc.i, t = sc.i+4, tBool
	case strings.HasPrefix(sc.s[sc.i:], "false"):
		sc.i, t = sc.i+5, tBool
	case strings.HasPrefix(sc.s[sc.i:], "null"):
		sc.i, t = sc.i+4, tNull
	default:
		return false
	}
	return n == nil || (n.allows(t) && !n.hasEnum && n.format == nil)
}

// allows reports whether n lets a value of type t through its type
// keyword; enum, const and format of non-strings are left to the library.
func (n *fastNode) allows(t uint8) bool {
	if n == nil {
		return true
	}
	if n.types != 0 && n.types&t == 0 {
		return false
	}
	return (t == tString || !n.hasEnum) && (t == tString || n.format == nil)
}

// str matches a string's value against n.
func (n *fastNode) str(v string) bool {
	if n.hasEnum && !slices.Contains(n.enumStr, v) {
		return false
	}
	if n.format != nil && n.format.Validate(v) != nil {
		return false
	}
	if n.pattern != nil && !n.pattern.MatchString(v) {
		return false
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(v)
		if (n.minLen >= 0 && l < n.minLen) || (n.maxLen >= 0 && l > n.maxLen) {
			return false
		}
	}
	return true
}

// numberHolds checks a number literal against n's bounds.
func (n *fastNode) numberHolds(lit string) bool {
	if !n.hasMin && !n.hasMax && !n.hasExMin && !n.hasExMax {
		return true
	}
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return !(n.hasMin && i < n.min) && !(n.hasMax && i > n.max) && !(n.hasExMin && i <= n.exMin) && !(n.hasExMax && i >= n.exMax)
	}
	return n.boundsHold(lit)
}

func (sc *scanner) object(n *fastNode, depth int) bool {
	if depth >= MaxDepth {
		return false
	}
	sc.i++ // {
	var seen keySet
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
		sc.i++
	} else {
		for {
			if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
				return false
			}
			k, escaped, ok := sc.str()
			if !ok || escaped || !seen.add(k) {
				return false // an escaped key is compared decoded: left to the full path
			}
			sc.ws()
			if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
				return false
			}
			sc.i++
			sc.ws()
			var child *fastNode
			if n != nil {
				if p, declared := n.prop(k); declared {
					child = p
				} else if n.addlFalse {
					return false
				} else {
					child = n.addl
				}
			}
			if !sc.value(child, depth+1) {
				return false
			}
			if done, ok := sc.after('}'); !ok {
				return false
			} else if done {
				break
			}
		}
	}
	if n == nil {
		return true
	}
	for _, name := range n.required {
		if !seen.has(name) {
			return false
		}
	}
	return (n.minProps < 0 || seen.n >= n.minProps) && (n.maxProps < 0 || seen.n <= n.maxProps)
}

// after reads what follows a member or an item: its container's closer
// (done) or a comma and the space after it; ok is false for anything else.
func (sc *scanner) after(closer byte) (done, ok bool) {
	sc.ws()
	if sc.i >= len(sc.s) {
		return false, false
	}
	switch sc.s[sc.i] {
	case closer:
		sc.i++
		return true, true
	case ',':
		sc.i++
		sc.ws()
		return false, true
	}
	return false, false
}

func (sc *scanner) array(n *fastNode, depth int) bool {
	if depth >= MaxDepth {
		return false
	}
	sc.i++ // [
	var items *fastNode
	if n != nil {
		items = n.items
	}
	count := 0
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
	} else {
		for {
			if !sc.value(items, depth+1) {
				return false
			}
			count++
			if done, ok := sc.after(']'); !ok {
				return false
			} else if done {
				break
			}
		}
	}
	return n == nil || ((n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems))
}

// str reads a string at sc.i (its opening quote) as gjson.Valid checks
// one: no control character, only JSON's escapes. v is the text between
// the quotes, which is the value when escaped is false.
func (sc *scanner) str() (v string, escaped, ok bool) {
	start := sc.i + 1
	for i := start; i < len(sc.s); i++ {
		switch c := sc.s[i]; {
		case c < ' ':
			return "", false, false
		case c == '"':
			sc.i = i + 1
			return sc.s[start:i], escaped, true
		case c == '\\':
			escaped = true
			i++
			if i >= len(sc.s) {
				return "", false, false
			}
			switch sc.s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(sc.s) || !isHex(sc.s[i+1]) || !isHex(sc.s[i+2]) || !isHex(sc.s[i+3]) || !isHex(sc.s[i+4]) {
					return "", false, false
				}
				i += 4
			default:
				return "", false, false
			}
		}
	}
	return "", false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a number at sc.i by JSON's grammar, as gjson.Valid does.
func (sc *scanner) number() (string, bool) {
	s, start := sc.s, sc.i
	i := start
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return "", false
		}
	}
	sc.i = i
	return s[start:i], true
}

// keySet holds an object's keys, to find a repeated one: the first few in
// place, compared pairwise, the rest in a map.
type keySet struct {
	n     int
	small [16]string
	more  map[string]struct{}
}

func (s *keySet) has(k string) bool {
	for i := 0; i < s.n && i < len(s.small); i++ {
		if s.small[i] == k {
			return true
		}
	}
	_, ok := s.more[k]
	return ok
}

// add adds k, false when it is there already.
func (s *keySet) add(k string) bool {
	if s.has(k) {
		return false
	}
	if s.n < len(s.small) {
		s.small[s.n] = k
	} else {
		if s.more == nil {
			s.more = make(map[string]struct{})
		}
		s.more[k] = struct{}{}
	}
	s.n++
	return true
}

// isIntLiteral reports whether a number literal is digits alone: an
// integer to the library. 2.0 and 1e3 are integers to it too, and are left
// to it.
func isIntLiteral(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// boundsHold reports whether the number lit, not an integer literal, is
// surely within the bounds. The library compares exactly; a float64 is
// exact for bounds up to 2^53 in magnitude, and rounding to nearest is
// monotonic, so a rounded value strictly past a bound is the exact value
// strictly past it too. A rounded value equal to a bound is not sure.
func (n *fastNode) boundsHold(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false // out of float64's range
	}
	above := func(b int64) bool { return exactFloat(b) && f > float64(b) }
	below := func(b int64) bool { return exactFloat(b) && f < float64(b) }
	return (!n.hasMin || above(n.min)) && (!n.hasExMin || above(n.exMin)) && (!n.hasMax || below(n.max)) && (!n.hasExMax || below(n.exMax))
}

func exactFloat(b int64) bool { return b >= -1<<53 && b <= 1<<53 }
