package jsonschema

import (
	"fmt"
	"math"
	"strings"

	"github.com/tidwall/gjson"
)

// MaxDepth bounds how deeply subschemas may nest; deeper schemas fail with [ErrTooDeep].
const MaxDepth = 128

// linearMax is the property count up to which lookups scan a slice instead of a map.
const linearMax = 8

// kind is the JSON type of a value; integer is a sub-kind of number.
type kind uint8

const (
	kNull kind = iota
	kBoolean
	kObject
	kArray
	kNumber
	kString
	kInteger
)

var kindNames = [...]string{
	kNull:    "null",
	kBoolean: "boolean",
	kObject:  "object",
	kArray:   "array",
	kNumber:  "number",
	kString:  "string",
	kInteger: "integer",
}

// typeSet is a bit set of kinds; the zero value accepts everything.
type typeSet uint8

func (t typeSet) has(k kind) bool { return t&(1<<k) != 0 }

// addl is the additionalProperties mode.
type addl uint8

const (
	addlAny addl = iota
	addlFalse
	addlSchema
)

// property is a name the object keywords know about: a key of properties
// (declared) or a name listed only in required.
type property struct {
	name     string
	schema   *Schema // nil for required-only names
	declared bool
	required bool
}

// bound is one numeric limit.
type bound struct {
	set bool
	v   float64
	raw string // compact schema text, for messages
}

// Schema is a compiled JSON Schema. It is immutable and safe for concurrent use.
type Schema struct {
	isFalse  bool    // the boolean schema false
	types    typeSet // 0: any type
	typeText string  // "expected string or null"

	props     []property
	index     map[string]int // name -> props index, when len(props) > linearMax
	objKw     bool           // any object keyword present
	addl      addl
	addlSch   *Schema
	nRequired int

	items              *Schema
	minItems, maxItems int // -1: unset

	minLen, maxLen int // -1: unset
	pattern        matcher
	patternText    string
	format         format

	minimum, maximum, exclMin, exclMax bound

	enum     []gjson.Result
	enumText string
	hasConst bool
	constVal gjson.Result
	constTxt string

	allOf, anyOf, oneOf []*Schema
}

// Compile parses and checks a schema once, for repeated validation.
// The root must be a JSON object. Errors wrap one of the sentinels in errors.go.
func Compile(schema []byte) (*Schema, error) {
	if !gjson.ValidBytes(schema) {
		return nil, fmt.Errorf("jsonschema: %w", ErrSchemaJSON)
	}
	root := gjson.Parse(string(schema)) // copy: compiled values point into it
	if !isObject(root) {
		return nil, fmt.Errorf("jsonschema: root: %w: got %s", ErrNotSchema, kindNames[kindOf(root)])
	}
	return compile(root, "", 0)
}

// MustCompile is Compile for schemas known to be valid; it panics on error.
func MustCompile(schema string) *Schema {
	s, err := Compile([]byte(schema))
	if err != nil {
		panic(err)
	}
	return s
}

func isObject(r gjson.Result) bool { return r.Type == gjson.JSON && r.Raw[0] == '{' }
func isArray(r gjson.Result) bool  { return r.Type == gjson.JSON && r.Raw[0] == '[' }

// kindOf reports the JSON type of a value of a valid document (never kInteger).
func kindOf(r gjson.Result) kind {
	switch r.Type {
	case gjson.False, gjson.True:
		return kBoolean
	case gjson.Number:
		return kNumber
	case gjson.String:
		return kString
	case gjson.JSON:
		if r.Raw[0] == '[' {
			return kArray
		}
		return kObject
	}
	return kNull
}

func errAt(at string, sentinel error, detail string) error {
	if at == "" {
		at = "root"
	}
	if detail == "" {
		return fmt.Errorf("jsonschema: %s: %w", at, sentinel)
	}
	return fmt.Errorf("jsonschema: %s: %w: %s", at, sentinel, detail)
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// compileSub compiles a subschema, which may also be a boolean.
func compileSub(r gjson.Result, at string, depth int) (*Schema, error) {
	switch r.Type {
	case gjson.True:
		return &Schema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}, nil
	case gjson.False:
		return &Schema{isFalse: true}, nil
	}
	if !isObject(r) {
		return nil, errAt(at, ErrNotSchema, "got "+kindNames[kindOf(r)])
	}
	return compile(r, at, depth+1)
}

func compile(r gjson.Result, at string, depth int) (*Schema, error) {
	if depth > MaxDepth {
		return nil, errAt(at, ErrTooDeep, "")
	}
	s := &Schema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	var (
		err      error
		seen     = make(map[string]bool)
		required gjson.Result
		exMinB   gjson.Result // draft-4 boolean exclusiveMinimum
		exMaxB   gjson.Result
	)
	r.ForEach(func(k, v gjson.Result) bool {
		key := k.Str
		if seen[key] {
			err = errAt(at, ErrDuplicateKey, quote(key))
			return false
		}
		seen[key] = true
		kat := join(at, key)
		switch key {
		case "type":
			err = s.compileType(v, kat)
		case "properties":
			err = s.compileProperties(v, kat, depth)
		case "required":
			required = v
			if !isArray(v) {
				err = errAt(kat, ErrRequired, "not an array")
			}
		case "additionalProperties":
			s.objKw = true
			switch {
			case v.Type == gjson.True:
				s.addl = addlAny
			case v.Type == gjson.False:
				s.addl = addlFalse
			case isObject(v):
				s.addl = addlSchema
				s.addlSch, err = compile(v, kat, depth+1)
			default:
				err = errAt(kat, ErrAdditional, "got "+kindNames[kindOf(v)])
			}
		case "items":
			if isArray(v) {
				err = errAt(kat, ErrItems, "tuple form is not supported")
				break
			}
			s.items, err = compileSub(v, kat, depth)
			if err != nil && !isObject(v) {
				err = errAt(kat, ErrItems, "got "+kindNames[kindOf(v)])
			}
		case "minItems":
			s.minItems, err = count(v, kat)
		case "maxItems":
			s.maxItems, err = count(v, kat)
		case "minLength":
			s.minLen, err = count(v, kat)
		case "maxLength":
			s.maxLen, err = count(v, kat)
		case "minimum":
			s.minimum, err = number(v, kat)
		case "maximum":
			s.maximum, err = number(v, kat)
		case "exclusiveMinimum":
			if v.IsBool() {
				exMinB = v
			} else {
				s.exclMin, err = number(v, kat)
			}
		case "exclusiveMaximum":
			if v.IsBool() {
				exMaxB = v
			} else {
				s.exclMax, err = number(v, kat)
			}
		case "enum":
			if !isArray(v) {
				err = errAt(kat, ErrEnum, "not an array")
				break
			}
			s.enum = v.Array()
			if len(s.enum) == 0 {
				err = errAt(kat, ErrEnum, "empty array")
			}
			s.enumText = display(v.Raw, 200)
		case "const":
			s.hasConst, s.constVal, s.constTxt = true, v, display(v.Raw, 200)
		case "pattern":
			if v.Type != gjson.String {
				err = errAt(kat, ErrPattern, "not a string")
				break
			}
			s.patternText = v.Str
			var perr error
			if s.pattern, perr = compilePattern(v.Str); perr != nil {
				err = errAt(kat, ErrPattern, perr.Error())
			}
		case "format":
			if v.Type != gjson.String {
				err = errAt(kat, ErrFormat, "not a string")
				break
			}
			if s.format = formatByName(v.Str); s.format == fNone {
				err = errAt(kat, ErrFormat, quote(v.Str))
			}
		case "allOf":
			s.allOf, err = compileList(v, kat, depth)
		case "anyOf":
			s.anyOf, err = compileList(v, kat, depth)
		case "oneOf":
			s.oneOf, err = compileList(v, kat, depth)
		case "$ref", "$dynamicRef", "$recursiveRef":
			err = errAt(kat, ErrUnsupported, "references are not supported")
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if required.Exists() {
		if err := s.compileRequired(required, join(at, "required")); err != nil {
			return nil, err
		}
	}
	if exMinB.Type == gjson.True && s.minimum.set {
		s.exclMin, s.minimum = s.minimum, bound{}
	}
	if exMaxB.Type == gjson.True && s.maximum.set {
		s.exclMax, s.maximum = s.maximum, bound{}
	}
	if len(s.props) > linearMax {
		s.index = make(map[string]int, len(s.props))
		for i, p := range s.props {
			s.index[p.name] = i
		}
	}
	return s, s.checkRanges(at)
}

func (s *Schema) checkRanges(at string) error {
	if s.minItems >= 0 && s.maxItems >= 0 && s.minItems > s.maxItems {
		return errAt(at, ErrRange, "minItems is greater than maxItems")
	}
	if s.minLen >= 0 && s.maxLen >= 0 && s.minLen > s.maxLen {
		return errAt(at, ErrRange, "minLength is greater than maxLength")
	}
	lo, hi := s.minimum, s.maximum
	if lo.set && hi.set && lo.v > hi.v {
		return errAt(at, ErrRange, "minimum is greater than maximum")
	}
	// Any pair with an exclusive side is empty when lower >= upper.
	lows := [2]bound{s.minimum, s.exclMin}
	highs := [2]bound{s.maximum, s.exclMax}
	for i, l := range lows {
		for j, h := range highs {
			if (i|j) != 0 && l.set && h.set && l.v >= h.v {
				return errAt(at, ErrRange, "the numeric bounds exclude every value")
			}
		}
	}
	return nil
}

func (s *Schema) compileType(v gjson.Result, at string) error {
	var names []string
	switch {
	case v.Type == gjson.String:
		names = []string{v.Str}
	case isArray(v):
		var bad bool
		v.ForEach(func(_, n gjson.Result) bool {
			if n.Type != gjson.String {
				bad = true
				return false
			}
			names = append(names, n.Str)
			return true
		})
		if bad || len(names) == 0 {
			return errAt(at, ErrType, "want a type name or a non-empty array of them")
		}
	default:
		return errAt(at, ErrType, "want a type name or a non-empty array of them")
	}
	var listed []string
	for _, n := range names {
		k := kind(255)
		for i, kn := range kindNames {
			if kn == n {
				k = kind(i)
			}
		}
		if k == 255 {
			return errAt(at, ErrType, quote(n)+" is not a JSON type")
		}
		if !s.types.has(k) {
			listed = append(listed, n)
		}
		s.types |= 1 << k
	}
	if s.types.has(kNumber) {
		s.types |= 1 << kInteger
	}
	s.typeText = "expected " + orList(listed)
	return nil
}

// orList renders ["a","b","c"] as "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func (s *Schema) compileProperties(v gjson.Result, at string, depth int) error {
	if !isObject(v) {
		return errAt(at, ErrProperties, "not an object")
	}
	s.objKw = true
	var err error
	v.ForEach(func(k, pv gjson.Result) bool {
		name := k.Str
		for _, p := range s.props {
			if p.name == name {
				err = errAt(at, ErrDuplicateKey, quote(name))
				return false
			}
		}
		var sub *Schema
		if sub, err = compileSub(pv, join(at, name), depth); err != nil {
			return false
		}
		s.props = append(s.props, property{name: name, schema: sub, declared: true})
		return true
	})
	return err
}

func (s *Schema) compileRequired(v gjson.Result, at string) error {
	s.objKw = true
	var err error
	v.ForEach(func(_, n gjson.Result) bool {
		if n.Type != gjson.String {
			err = errAt(at, ErrRequired, "want an array of strings")
			return false
		}
		for i := range s.props {
			if s.props[i].name == n.Str {
				if !s.props[i].required {
					s.props[i].required = true
					s.nRequired++
				}
				return true
			}
		}
		s.props = append(s.props, property{name: n.Str, required: true})
		s.nRequired++
		return true
	})
	return err
}

func compileList(v gjson.Result, at string, depth int) ([]*Schema, error) {
	if !isArray(v) {
		return nil, errAt(at, ErrCombinator, "want a non-empty array of schemas")
	}
	var (
		out []*Schema
		err error
	)
	i := 0
	v.ForEach(func(_, sv gjson.Result) bool {
		var sub *Schema
		if sub, err = compileSub(sv, join(at, itoa(i)), depth); err != nil {
			return false
		}
		out = append(out, sub)
		i++
		return true
	})
	if err == nil && len(out) == 0 {
		err = errAt(at, ErrCombinator, "want a non-empty array of schemas")
	}
	return out, err
}

func count(v gjson.Result, at string) (int, error) {
	if v.Type != gjson.Number || !isInteger(v) || v.Num < 0 || v.Num > math.MaxInt32 {
		return -1, errAt(at, ErrCount, "want a non-negative integer")
	}
	return int(v.Num), nil
}

func number(v gjson.Result, at string) (bound, error) {
	if v.Type != gjson.Number || math.IsInf(v.Num, 0) || math.IsNaN(v.Num) {
		return bound{}, errAt(at, ErrNumber, "want a finite number")
	}
	return bound{set: true, v: v.Num, raw: v.Raw}, nil
}
