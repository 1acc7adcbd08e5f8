package jsonschema

import (
	"cmp"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	js "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/tidwall/gjson"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Error is one reason a document does not match a schema.
type Error struct {
	// Path is the dotted location of the offending value, such as
	// "lines.0.goodsCode"; "" is the document root. For a missing required
	// property it is the location the property should have.
	Path string `json:"path"`
	// Keyword is the schema keyword that failed ("required", "maximum", …),
	// "json" when the document is not valid JSON or repeats a key, or
	// "limit" when it exceeds MaxDocBytes or MaxDepth.
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
// the document is valid. Errors come in a deterministic order: those of
// properties the schema declares, in the order the schema text declares
// them (array items by index), then required names the schema does not
// declare, then properties it does not allow, in document order.
func (s *Schema) Validate(doc []byte) []Error { return s.ValidateString(string(doc)) }

// ValidateString is Validate for a document held as a string.
func (s *Schema) ValidateString(doc string) []Error {
	if len(doc) > MaxDocBytes {
		return []Error{{Keyword: "limit", Message: "document is " + strconv.Itoa(len(doc)) + " bytes, more than the limit of " + strconv.Itoa(MaxDocBytes)}}
	}
	if s.fast != nil && s.fast.validFast(doc) {
		return nil
	}
	return s.validateFull(doc)
}

// validateFull is ValidateString without the fast path: the document
// decoded and checked by the library.
func (s *Schema) validateFull(doc string) []Error {
	if len(doc) > MaxDocBytes {
		return []Error{{Keyword: "limit", Message: "document is " + strconv.Itoa(len(doc)) + " bytes, more than the limit of " + strconv.Itoa(MaxDocBytes)}}
	}
	v, err := decode(doc)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) && (de.why == whyDepth || de.why == whyNumber) {
			return []Error{{Path: dotted(de.path), Keyword: "limit", Message: de.Error()}}
		}
		if de != nil && de.why == whyDuplicate {
			return []Error{{Path: dotted(de.path), Keyword: "json", Message: de.Error()}}
		}
		return []Error{{Keyword: "json", Message: "document is not valid JSON"}}
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *js.ValidationError
	if !errors.As(err, &ve) {
		return []Error{{Keyword: "json", Message: err.Error()}}
	}
	return report(ve, s.text, gjson.Parse(doc))
}

// report flattens a library error tree into Errors. schema is the schema
// text (zero when the errors are a metaschema's, about a schema), doc the
// instance text; both serve to quote values as written.
func report(ve *js.ValidationError, schema, doc gjson.Result) []Error {
	r := reporter{schema: schema, doc: doc}
	r.walk(ve)
	if len(r.items) == 0 {
		r.add(ve, "", "does not match the schema")
	}
	slices.SortStableFunc(r.items, compareItems)
	out := make([]Error, 0, len(r.items))
	for i, it := range r.items {
		if i > 0 && it.e == r.items[i-1].e {
			continue
		}
		out = append(out, it.e)
	}
	return out
}

// item is an Error with its sort key: for each segment of its path, a
// rank (where the schema text declares that property; after the declared
// ones, required names the schema does not declare; last, properties it
// does not allow, in document order); then where the failing keyword is in
// the schema text, and where the value is in the document.
type item struct {
	e       Error
	segs    []string
	ranks   []int
	at, pos int
}

func rankAt(it item, i int) int {
	if i < len(it.ranks) {
		return it.ranks[i]
	}
	return 0
}

// Rank bases of undeclared names, after every offset in a schema text.
const (
	rankRequiredOnly = 1 << 40
	rankNotAllowed   = 2 << 40
)

// compareItems orders errors by where they are: by the first segment of
// their paths that differs (array items by index, properties by rank), a
// value before what is inside it, then by schema text, then document text.
func compareItems(a, b item) int {
	for i := 0; i < len(a.segs) && i < len(b.segs); i++ {
		if a.segs[i] == b.segs[i] {
			continue
		}
		x, errX := strconv.Atoi(a.segs[i])
		y, errY := strconv.Atoi(b.segs[i])
		if errX == nil && errY == nil {
			return cmp.Compare(x, y)
		}
		return cmp.Or(cmp.Compare(rankAt(a, i), rankAt(b, i)), strings.Compare(a.segs[i], b.segs[i]))
	}
	return cmp.Or(cmp.Compare(len(a.segs), len(b.segs)), cmp.Compare(a.at, b.at), cmp.Compare(a.pos, b.pos),
		strings.Compare(a.e.Keyword, b.e.Keyword), strings.Compare(a.e.Message, b.e.Message))
}

type reporter struct {
	schema, doc gjson.Result
	items       []item
	ranks       []int    // of the current instance location's segments
	curLoc      []string // the current instance location
}

var printer = message.NewPrinter(language.English)

func (r *reporter) walk(ve *js.ValidationError) {
	saved, savedLoc := r.ranks, r.curLoc
	defer func() { r.ranks, r.curLoc = saved, savedLoc }()
	r.curLoc = ve.InstanceLocation
	for d := len(r.ranks); d < len(ve.InstanceLocation); d++ {
		// A deeper location is entered through the subschema of its
		// property (or items): its place in the schema text is the rank.
		at, ok := r.schemaAt(ve)
		rank := at.Index
		if !ok {
			rank = r.docOffset(ve.InstanceLocation[:d+1])
		}
		r.ranks = append(slices.Clip(r.ranks), rank)
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range ve.Causes {
			r.walk(c)
		}
	case *kind.AnyOf:
		r.alternatives(ve, "anyOf")
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			r.add(ve, "oneOf", "matches more than one schema in oneOf")
			return
		}
		r.alternatives(ve, "oneOf")
	case *kind.Required:
		for _, name := range k.Missing {
			rank := rankRequiredOnly + r.offset(ve, "required")
			if p, ok := r.schemaAt(ve, "properties", name); ok {
				rank = p.Index
			}
			r.push(Error{Path: join(ve.InstanceLocation, name), Keyword: "required", Message: "required property is missing"},
				name, rank, r.offset(ve, "required"), r.docOffset(ve.InstanceLocation))
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			loc := append(slices.Clip(ve.InstanceLocation), name)
			pos := r.docOffset(loc)
			r.push(Error{Path: dotted(loc), Keyword: "additionalProperties", Message: "property is not allowed (additionalProperties is false)"},
				name, rankNotAllowed+pos, r.offset(ve, "additionalProperties"), pos)
		}
	case *kind.FalseSchema:
		if strings.HasSuffix(ve.SchemaURL, "/unevaluatedProperties") {
			r.add(ve, "unevaluatedProperties", "property is not allowed (unevaluatedProperties is false)")
			return
		}
		r.add(ve, "false", "value is not allowed")
	case *kind.Type:
		r.add(ve, "type", "expected "+orList(r.types(ve, k))+", got "+k.Got)
	case *kind.Enum:
		r.add(ve, "enum", r.value(ve)+" is not one of "+r.keyword(ve, "enum", func() string { return marshal(k.Want) }))
	case *kind.Const:
		r.add(ve, "const", r.value(ve)+" is not equal to the constant "+r.keyword(ve, "const", func() string { return marshal(k.Want) }))
	case *kind.Format:
		r.add(ve, "format", r.value(ve)+" is not a valid "+k.Want)
	case *kind.Pattern:
		r.add(ve, "pattern", r.value(ve)+" does not match the pattern "+strconv.Quote(k.Want))
	case *kind.MinLength:
		r.add(ve, "minLength", r.value(ve)+" is shorter than the minimum length "+strconv.Itoa(k.Want))
	case *kind.MaxLength:
		r.add(ve, "maxLength", r.value(ve)+" is longer than the maximum length "+strconv.Itoa(k.Want))
	case *kind.MinItems:
		r.add(ve, "minItems", "array has "+items(k.Got)+", fewer than the minimum "+strconv.Itoa(k.Want))
	case *kind.MaxItems:
		r.add(ve, "maxItems", "array has "+items(k.Got)+", more than the maximum "+strconv.Itoa(k.Want))
	case *kind.Minimum:
		r.add(ve, "minimum", r.value(ve)+" is less than the minimum "+r.bound(ve, "minimum", k.Want))
	case *kind.Maximum:
		r.add(ve, "maximum", r.value(ve)+" is greater than the maximum "+r.bound(ve, "maximum", k.Want))
	case *kind.ExclusiveMinimum:
		r.add(ve, "exclusiveMinimum", r.value(ve)+" is not greater than the exclusive minimum "+r.bound(ve, "exclusiveMinimum", k.Want))
	case *kind.ExclusiveMaximum:
		r.add(ve, "exclusiveMaximum", r.value(ve)+" is not less than the exclusive maximum "+r.bound(ve, "exclusiveMaximum", k.Want))
	case *kind.MultipleOf:
		r.add(ve, "multipleOf", r.value(ve)+" is not a multiple of "+r.bound(ve, "multipleOf", k.Want))
	default:
		kw := ""
		if p := ve.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[0]
		}
		r.add(ve, kw, ve.ErrorKind.LocalizedString(printer))
	}
}

// alternatives reports an anyOf or oneOf that no subschema matched. When
// every alternative but one already fails on the value's type, the errors
// of that one are what the caller can act on (an optional object,
// anyOf [{$ref}, {type: null}], given an object with a bad field); when all
// fail on type, one type error lists what is allowed.
func (r *reporter) alternatives(ve *js.ValidationError, keyword string) {
	var (
		rest  []*reporter
		types []string
		got   string
	)
	for _, c := range ve.Causes {
		sub := &reporter{schema: r.schema, doc: r.doc, ranks: r.ranks}
		sub.walk(c)
		if len(sub.items) == 1 && sub.items[0].e.Keyword == "type" && sub.items[0].e.Path == dotted(ve.InstanceLocation) {
			t := typeError(c)
			if t != nil {
				got = t.Got
				for _, w := range sub.types(typeCause(c), t) {
					if !slices.Contains(types, w) {
						types = append(types, w)
					}
				}
				continue
			}
		}
		rest = append(rest, sub)
	}
	switch {
	case len(rest) == 1:
		r.items = append(r.items, rest[0].items...)
	case len(rest) == 0 && len(types) > 0:
		r.add(ve, "type", "expected "+orList(types)+", got "+got)
	default:
		r.add(ve, keyword, "does not match any of the allowed schemas ("+keyword+")")
	}
}

// typeCause finds the type error under an alternative's wrappers.
func typeCause(ve *js.ValidationError) *js.ValidationError {
	for ve != nil {
		if _, ok := ve.ErrorKind.(*kind.Type); ok {
			return ve
		}
		if len(ve.Causes) != 1 {
			return nil
		}
		ve = ve.Causes[0]
	}
	return nil
}

func typeError(ve *js.ValidationError) *kind.Type {
	if c := typeCause(ve); c != nil {
		return c.ErrorKind.(*kind.Type)
	}
	return nil
}

func (r *reporter) add(ve *js.ValidationError, keyword, msg string) {
	if keyword == "" {
		// An error of no keyword (a reference cycle found while
		// validating): the schema as a whole cannot be applied.
		keyword = "schema"
	}
	r.items = append(r.items, item{e: Error{Path: dotted(ve.InstanceLocation), Keyword: keyword, Message: msg},
		segs: slices.Clone(ve.InstanceLocation), ranks: slices.Clone(r.ranks), at: r.offset(ve, keyword), pos: r.docOffset(ve.InstanceLocation)})
}

// push records an error about a property of the current object.
func (r *reporter) push(e Error, name string, rank, at, pos int) {
	r.items = append(r.items, item{e: e, segs: append(slices.Clone(r.curLoc), name), ranks: append(slices.Clone(r.ranks), rank), at: at, pos: pos})
}

// schemaAt finds a keyword of the failing schema in the schema text.
func (r *reporter) schemaAt(ve *js.ValidationError, keyword ...string) (gjson.Result, bool) {
	if !r.schema.Exists() {
		return gjson.Result{}, false
	}
	toks := pointerTokens(ve.SchemaURL)
	if toks == nil {
		return gjson.Result{}, false
	}
	res := lookup(r.schema, append(toks, keyword...))
	return res, res.Exists()
}

// offset is where a keyword of the failing schema is in the schema text
// (or, for a metaschema's errors, where the value is in the document).
func (r *reporter) offset(ve *js.ValidationError, keyword string) int {
	if res, ok := r.schemaAt(ve, keyword); ok {
		return res.Index
	}
	if res, ok := r.schemaAt(ve); ok {
		return res.Index
	}
	return r.docOffset(ve.InstanceLocation)
}

func (r *reporter) docOffset(loc []string) int { return lookup(r.doc, loc).Index }

// value quotes the failing value as the document wrote it.
func (r *reporter) value(ve *js.ValidationError) string {
	return display(lookup(r.doc, ve.InstanceLocation).Raw, showMax)
}

// keyword quotes a keyword's value as the schema wrote it, or as fallback
// renders it when the schema is not at hand.
func (r *reporter) keyword(ve *js.ValidationError, name string, fallback func() string) string {
	if res, ok := r.schemaAt(ve, name); ok {
		return display(res.Raw, 200)
	}
	return fallback()
}

func (r *reporter) bound(ve *js.ValidationError, name string, want *big.Rat) string {
	if res, ok := r.schemaAt(ve, name); ok && res.Type == gjson.Number {
		return res.Raw
	}
	return ratString(want)
}

// types lists the allowed types in the order the schema names them.
func (r *reporter) types(ve *js.ValidationError, k *kind.Type) []string {
	if ve != nil {
		if res, ok := r.schemaAt(ve, "type"); ok {
			var out []string
			if res.Type == gjson.String {
				out = []string{res.Str}
			} else {
				for _, t := range res.Array() {
					out = append(out, t.Str)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return k.Want
}

// lookup walks JSON pointer tokens through a document.
func lookup(r gjson.Result, toks []string) gjson.Result {
	for _, t := range toks {
		if !r.Exists() {
			return r
		}
		var next gjson.Result
		switch {
		case r.IsObject():
			r.ForEach(func(k, v gjson.Result) bool {
				if k.Str == t {
					next = v
					return false
				}
				return true
			})
		case r.IsArray():
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 {
				return gjson.Result{}
			}
			n := 0
			r.ForEach(func(_, v gjson.Result) bool {
				if n == i {
					next = v
					return false
				}
				n++
				return true
			})
		}
		r = next
	}
	return r
}

func join(loc []string, name string) string {
	if len(loc) == 0 {
		return name
	}
	return dotted(loc) + "." + name
}

// orList renders ["a","b","c"] as "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func marshal(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return display(b.String(), 200)
}

// writeJSON renders a decoded value (from a metaschema) compactly.
func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		b.WriteString(printer.Sprint(x))
	}
}

// showMax is how many bytes of a document value a message quotes.
const showMax = 64

// display compacts JSON text (drops whitespace outside strings) into a new
// string, cut to about max bytes with "..." marking the cut.
func display(raw string, max int) string {
	var b strings.Builder
	b.Grow(min(len(raw), max+4))
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inStr && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			continue
		}
		if b.Len() >= max && len(raw)-i > 4 && utf8.RuneStart(c) {
			if raw[0] == '"' {
				b.WriteString(`..."`)
			} else {
				b.WriteString("...")
			}
			return b.String()
		}
		b.WriteByte(c)
		switch {
		case esc:
			esc = false
		case c == '\\' && inStr:
			esc = true
		case c == '"':
			inStr = !inStr
		}
	}
	return b.String()
}
