package jsonschema

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Error is one validation problem.
type Error struct {
	// Path is the dotted location of the offending value, such as
	// "lines.0.goodsCode"; "" is the document root.
	Path string `json:"path"`
	// Keyword is the schema keyword that failed ("required", "maximum", …),
	// or "json" when the document itself is not valid JSON.
	Keyword string `json:"keyword"`
	// Message is a short English description without the path.
	Message string `json:"message"`
}

// Error renders "path: message", or just the message at the root.
func (e Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Validate checks a JSON document and returns every problem found, or nil if
// the document is valid. Errors come in a deterministic order: for each
// object, the keys of "properties" in schema order, then names that are only
// in "required", then other keys in document order.
//
// An invalid JSON document yields a single Error with Keyword "json".
// doc is only read, and must not change during the call; the returned
// errors never alias it.
func (s *Schema) Validate(doc []byte) []Error {
	if !gjson.ValidBytes(doc) {
		return []Error{{Keyword: "json", Message: "document is not valid JSON"}}
	}
	return s.ValidateResult(gjson.Parse(unsafe.String(unsafe.SliceData(doc), len(doc))))
}

// ValidateString is Validate for a document held in a string.
func (s *Schema) ValidateString(doc string) []Error {
	if !gjson.Valid(doc) {
		return []Error{{Keyword: "json", Message: "document is not valid JSON"}}
	}
	return s.ValidateResult(gjson.Parse(doc))
}

// ValidateResult validates an already parsed value, for example
// gjson.GetBytes(req, "args"). gjson does not check syntax while parsing, so
// r must come from valid JSON (see gjson.Valid). A value that does not exist
// yields a single Error with Keyword "json".
func (s *Schema) ValidateResult(r gjson.Result) []Error {
	if !r.Exists() || (r.Type == gjson.JSON && r.Raw[0] != '{' && r.Raw[0] != '[') {
		return []Error{{Keyword: "json", Message: "document is missing"}}
	}
	st := statePool.Get().(*state)
	st.validate(s, r)
	errs := st.errs
	st.reset()
	statePool.Put(st)
	return errs
}

// seg is one step of the current path: an object key, or an array index when idx >= 0.
type seg struct {
	key string
	idx int
}

// state is the scratch space of one validation; pooled so a valid document costs no allocations.
type state struct {
	path   []seg
	vals   []gjson.Result // stack of per-object property slots
	dups   []int          // stack of props indexes seen twice
	errs   []Error
	quiet  int  // > 0 while probing anyOf/oneOf branches
	failed bool // set by a failure while quiet
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func (st *state) reset() {
	st.path = st.path[:0]
	clear(st.vals[:cap(st.vals)]) // drop references into the document
	st.vals = st.vals[:0]
	st.dups = st.dups[:0]
	st.errs = nil
	st.quiet, st.failed = 0, false
}

// report says whether a failure should be recorded with add; while probing it
// only notes the failure and returns false, so no message is built.
func (st *state) report() bool {
	if st.quiet > 0 {
		st.failed = true
		return false
	}
	return true
}

func (st *state) add(keyword, msg string) {
	st.errs = append(st.errs, Error{Path: st.pathString(), Keyword: keyword, Message: msg})
}

// addKey records a failure located at the child key of the current value.
func (st *state) addKey(key, keyword, msg string) {
	st.path = append(st.path, seg{key: key, idx: -1})
	st.add(keyword, msg)
	st.path = st.path[:len(st.path)-1]
}

func (st *state) pathString() string {
	if len(st.path) == 0 {
		return ""
	}
	var b strings.Builder // copies keys, so errors never alias the document
	for i, sg := range st.path {
		if i > 0 {
			b.WriteByte('.')
		}
		if sg.idx >= 0 {
			b.WriteString(strconv.Itoa(sg.idx))
		} else {
			b.WriteString(sg.key)
		}
	}
	return b.String()
}

// done reports whether a probe has already failed, so the walk can stop early.
func (st *state) done() bool { return st.quiet > 0 && st.failed }

func (st *state) validate(s *Schema, r gjson.Result) {
	if s.isFalse {
		if st.report() {
			st.add("false", "value is not allowed")
		}
		return
	}
	k := kindOf(r)
	if s.types != 0 && !s.types.has(k) && !(k == kNumber && s.types.has(kInteger) && isInteger(r)) {
		if st.report() {
			st.add("type", s.typeText+", got "+kindNames[k])
		}
		return
	}
	if s.hasConst && !equal(r, s.constVal) && st.report() {
		st.add("const", show(r)+" is not equal to the constant "+s.constTxt)
	}
	if s.enum != nil && !st.inEnum(s, r) && st.report() {
		st.add("enum", show(r)+" is not one of "+s.enumText)
	}
	switch k {
	case kObject:
		if s.objKw {
			st.object(s, r)
		}
	case kArray:
		if s.items != nil || s.minItems >= 0 || s.maxItems >= 0 {
			st.array(s, r)
		}
	case kString:
		if s.minLen >= 0 || s.maxLen >= 0 || s.pattern != nil || s.format != fNone {
			st.string(s, r)
		}
	case kNumber:
		st.number(s, r)
	}
	for _, sub := range s.allOf {
		st.validate(sub, r)
	}
	if s.anyOf != nil && st.matches(s.anyOf, r, 1) == 0 && st.report() {
		st.add("anyOf", "does not match any of the allowed schemas (anyOf)")
	}
	if s.oneOf != nil {
		switch n := st.matches(s.oneOf, r, 2); {
		case n == 0 && st.report():
			st.add("oneOf", "does not match any of the allowed schemas (oneOf)")
		case n > 1 && st.report():
			st.add("oneOf", "matches more than one schema in oneOf")
		}
	}
}

// matches counts the subschemas r validates against, stopping at limit.
func (st *state) matches(subs []*Schema, r gjson.Result, limit int) int {
	n := 0
	saved := st.failed
	st.quiet++
	for _, sub := range subs {
		st.failed = false
		st.validate(sub, r)
		if !st.failed {
			if n++; n == limit {
				break
			}
		}
	}
	st.quiet--
	st.failed = saved
	return n
}

func (st *state) inEnum(s *Schema, r gjson.Result) bool {
	for _, e := range s.enum {
		if equal(r, e) {
			return true
		}
	}
	return false
}

// lookup finds a props index by name, or -1.
func (s *Schema) lookup(name string) int {
	if s.index != nil {
		if i, ok := s.index[name]; ok {
			return i
		}
		return -1
	}
	for i := range s.props {
		if s.props[i].name == name {
			return i
		}
	}
	return -1
}

func (st *state) object(s *Schema, r gjson.Result) {
	base, dbase := len(st.vals), len(st.dups)
	for range s.props {
		st.vals = append(st.vals, gjson.Result{})
	}
	extras := 0
	r.ForEach(func(k, v gjson.Result) bool {
		i := s.lookup(k.Str)
		if i < 0 {
			extras++
			return true
		}
		if !s.props[i].declared {
			extras++
		}
		if st.vals[base+i].Exists() {
			st.dups = append(st.dups, i)
		} else {
			st.vals[base+i] = v
		}
		return true
	})
	for i := range s.props {
		p := &s.props[i]
		v := st.vals[base+i]
		if !v.Exists() {
			if p.required && st.report() {
				st.addKey(p.name, "required", "required property is missing")
			}
			continue
		}
		if p.declared {
			st.path = append(st.path, seg{key: p.name, idx: -1})
			st.validate(p.schema, v)
			st.path = st.path[:len(st.path)-1]
		}
		for _, d := range st.dups[dbase:] {
			if d == i && st.report() {
				st.addKey(p.name, "properties", "property appears more than once")
				break
			}
		}
		if st.done() {
			break
		}
	}
	st.vals = st.vals[:base]
	st.dups = st.dups[:dbase]
	if extras == 0 || s.addl == addlAny || st.done() {
		return
	}
	r.ForEach(func(k, v gjson.Result) bool {
		if i := s.lookup(k.Str); i >= 0 && s.props[i].declared {
			return true
		}
		if s.addl == addlFalse {
			if st.report() {
				st.addKey(k.Str, "additionalProperties", "property is not allowed (additionalProperties is false)")
			}
		} else {
			st.path = append(st.path, seg{key: k.Str, idx: -1})
			st.validate(s.addlSch, v)
			st.path = st.path[:len(st.path)-1]
		}
		return !st.done()
	})
}

func (st *state) array(s *Schema, r gjson.Result) {
	if s.minItems >= 0 || s.maxItems >= 0 {
		n := 0
		r.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		if s.minItems >= 0 && n < s.minItems && st.report() {
			st.add("minItems", "array has "+items(n)+", fewer than the minimum "+strconv.Itoa(s.minItems))
		}
		if s.maxItems >= 0 && n > s.maxItems && st.report() {
			st.add("maxItems", "array has "+items(n)+", more than the maximum "+strconv.Itoa(s.maxItems))
		}
	}
	if s.items == nil || st.done() {
		return
	}
	i := 0
	r.ForEach(func(_, v gjson.Result) bool {
		st.path = append(st.path, seg{idx: i})
		st.validate(s.items, v)
		st.path = st.path[:len(st.path)-1]
		i++
		return !st.done()
	})
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
}

func (st *state) string(s *Schema, r gjson.Result) {
	str := r.Str
	if s.minLen >= 0 || s.maxLen >= 0 {
		n := utf8.RuneCountInString(str)
		if s.minLen >= 0 && n < s.minLen && st.report() {
			st.add("minLength", show(r)+" is shorter than the minimum length "+strconv.Itoa(s.minLen))
		}
		if s.maxLen >= 0 && n > s.maxLen && st.report() {
			st.add("maxLength", show(r)+" is longer than the maximum length "+strconv.Itoa(s.maxLen))
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(str) && st.report() {
		st.add("pattern", show(r)+" does not match the pattern "+quote(s.patternText))
	}
	if s.format != fNone && !s.format.check(str) && st.report() {
		st.add("format", show(r)+" is not a valid "+s.format.String())
	}
}

func (st *state) number(s *Schema, r gjson.Result) {
	x := r.Num
	if s.minimum.set && x < s.minimum.v && st.report() {
		st.add("minimum", show(r)+" is less than the minimum "+s.minimum.raw)
	}
	if s.exclMin.set && x <= s.exclMin.v && st.report() {
		st.add("exclusiveMinimum", show(r)+" is not greater than the exclusive minimum "+s.exclMin.raw)
	}
	if s.maximum.set && x > s.maximum.v && st.report() {
		st.add("maximum", show(r)+" is greater than the maximum "+s.maximum.raw)
	}
	if s.exclMax.set && x >= s.exclMax.v && st.report() {
		st.add("exclusiveMaximum", show(r)+" is not less than the exclusive maximum "+s.exclMax.raw)
	}
}

// isInteger reports whether a JSON number has no fractional part; 2.0 and 1e3 count.
func isInteger(r gjson.Result) bool {
	if strings.IndexAny(r.Raw, ".eE") < 0 {
		return true
	}
	return !math.IsInf(r.Num, 0) && r.Num == math.Trunc(r.Num)
}

func itoa(i int) string { return strconv.Itoa(i) }

// quote renders a Go string as a JSON-style quoted string for messages.
func quote(s string) string { return strconv.Quote(s) }
