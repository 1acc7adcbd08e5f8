package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	js "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
)

// Input bounds. The validator runs on the host for sandboxed plugins, so
// neither a schema nor a document may cost it unbounded memory or time.
const (
	// MaxSchemaBytes bounds the text of a schema.
	MaxSchemaBytes = 1 << 20
	// MaxDocBytes bounds the text of a validated document.
	MaxDocBytes = 4 << 20
	// MaxDepth bounds how deeply objects and arrays nest, in a schema and in
	// a document.
	MaxDepth = 128
	// MaxSchemaNodes bounds the objects and booleans of a schema (each may
	// be a subschema, and a compiled subschema costs about a kilobyte).
	MaxSchemaNodes = 10000
	// MaxNumberChars and MaxExponent bound a number, in a schema and in a
	// document: the validator compares numbers exactly (as big.Rat), whose
	// cost grows with the digits and the exponent, and cannot represent
	// an exponent past the int32 range at all.
	MaxNumberChars = 400
	MaxExponent    = 1000
)

// base is the URI the schema document is compiled under. A $ref that
// resolves to anything but this document is refused.
const base = "warden:///schema.json"

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	s    *js.Schema
	text gjson.Result // the schema text, parsed, for quoting bounds in messages
	size int64        // estimated bytes the compiled form retains
	fast *fastNode    // the fast form (fast.go), nil when the schema has none
}

// Compile compiles a JSON Schema of draft 4, 6, 7, 2019-09 or 2020-12 (the
// default when $schema is absent). References ($ref, $dynamicRef) resolve
// inside the document ($defs, definitions, $id, $anchor, JSON pointers) and
// to the drafts' own metaschemas; any other document is refused with
// [ErrRemoteRef], never loaded. Known formats are asserted, unknown formats
// are ignored.
func Compile(schema []byte) (*Schema, error) { return compile(string(schema)) }

// MustCompile is Compile for schemas known to be valid; it panics otherwise.
func MustCompile(schema string) *Schema {
	s, err := compile(schema)
	if err != nil {
		panic(err)
	}
	return s
}

func compile(text string) (*Schema, error) {
	if len(text) > MaxSchemaBytes {
		return nil, fmt.Errorf("jsonschema: %w: %d bytes, the limit is %d", ErrTooLarge, len(text), MaxSchemaBytes)
	}
	d := decoder{limit: MaxSchemaNodes}
	doc, err := d.decode(text)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			switch de.why {
			case whyDepth:
				return nil, fmt.Errorf("jsonschema: %w: %s: more than %d levels", ErrTooDeep, where(de.path), MaxDepth)
			case whyDuplicate:
				return nil, fmt.Errorf("jsonschema: %w: %s", ErrDuplicateKey, dotted(de.path))
			case whyNodes:
				return nil, fmt.Errorf("jsonschema: %w: more than %d objects and booleans", ErrTooLarge, MaxSchemaNodes)
			case whyNumber:
				return nil, fmt.Errorf("jsonschema: %w: %s: %s", ErrTooLarge, where(de.path), de.Error())
			}
		}
		return nil, fmt.Errorf("jsonschema: %w", ErrSchemaJSON)
	}
	c := js.NewCompiler()
	c.UseLoader(denyLoader{})
	c.AssertFormat()
	c.DefaultDraft(js.Draft2020)
	if err := c.AddResource(base, doc); err != nil {
		return nil, compileError(text, err)
	}
	s, err := c.Compile(base)
	if err != nil {
		return nil, compileError(text, err)
	}
	return &Schema{s: s, text: gjson.Parse(text), size: estimate(len(text), d.nodes), fast: compileFast(doc, s)}, nil
}

// denyLoader refuses every document the compiler asks for: the drafts'
// metaschemas are built into the library and never reach a loader, and
// references inside the schema resolve without one.
type denyLoader struct{}

var errNotFetched = errors.New("not fetched")

func (denyLoader) Load(string) (any, error) { return nil, errNotFetched }

// compileError turns a library error into one wrapping a sentinel, with the
// schema's own URI taken out of the text.
func compileError(text string, err error) error {
	var (
		sve  *js.SchemaValidationError
		load *js.LoadURLError
		ptr  *js.JSONPointerNotFoundError
		dft  *js.UnsupportedDraftError
	)
	switch {
	case errors.As(err, &sve):
		var ve *js.ValidationError
		if errors.As(sve.Err, &ve) {
			errs := report(ve, gjson.Result{}, gjson.Parse(text))
			msgs := make([]string, 0, 3)
			for i, e := range errs {
				if i == 3 {
					msgs = append(msgs, fmt.Sprintf("and %d more", len(errs)-3))
					break
				}
				msgs = append(msgs, where(splitDotted(e.Path))+": "+e.Message)
			}
			return fmt.Errorf("jsonschema: %w: %s", ErrInvalid, strings.Join(msgs, "; "))
		}
		return fmt.Errorf("jsonschema: %w: %s", ErrInvalid, local(sve.Err.Error()))
	case errors.As(err, &load):
		return fmt.Errorf("jsonschema: %w: %q is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched",
			ErrRemoteRef, local(load.URL))
	case errors.As(err, &ptr):
		return fmt.Errorf("jsonschema: %w: %q points at nothing in the schema", ErrRef, local(ptr.URL))
	case errors.As(err, &dft):
		return fmt.Errorf("jsonschema: %w: $schema %q is not a known draft", ErrUnsupported, local(dft.URL))
	}
	return fmt.Errorf("jsonschema: %w: %s", ErrUnsupported, local(err.Error()))
}

// local shows a URI of the schema document as its fragment ("#/$defs/A"),
// and a relative reference as it was written.
func local(s string) string {
	s = strings.ReplaceAll(s, base, "")
	return strings.ReplaceAll(s, "warden:///", "")
}

// pointerTokens splits the fragment of a schema URI into JSON pointer
// tokens; nil when the URI is not one of the schema document's.
func pointerTokens(u string) []string {
	frag, ok := strings.CutPrefix(u, base+"#")
	if !ok {
		return nil
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	frag = strings.TrimPrefix(frag, "/")
	if frag == "" {
		return []string{}
	}
	toks := strings.Split(frag, "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// where names a location for a compile error: its dotted path, or "root".
func where(path []string) string {
	if len(path) == 0 {
		return "root"
	}
	return dotted(path)
}

func dotted(path []string) string { return strings.Join(path, ".") }

func splitDotted(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// estimate is the bytes a compiled schema is charged in a cache, from the
// length of its text and its objects and booleans (each a possible
// subschema): measured at 0.9 to 1.4 kB per subschema plus the strings it
// keeps (TestEstimateCoversCompiledSize), rounded up.
func estimate(n, nodes int) int64 { return 2*int64(n) + 1536*int64(nodes) + 16<<10 }

// Decoding. The library's own decoder keeps the last of repeated keys and
// has no depth bound, so documents and schemas are decoded here: numbers as
// json.Number (exact), repeated keys refused, nesting bounded.

type why uint8

const (
	whySyntax why = iota
	whyDepth
	whyDuplicate
	whyNodes
	whyNumber
)

type decodeError struct {
	why  why
	path []string
}

func (e *decodeError) Error() string {
	switch e.why {
	case whyDepth:
		return "nested more than " + strconv.Itoa(MaxDepth) + " levels"
	case whyDuplicate:
		return "property appears more than once"
	case whyNodes:
		return "too many objects and booleans"
	case whyNumber:
		return "number out of range (more than " + strconv.Itoa(MaxNumberChars) + " characters or an exponent past ±" + strconv.Itoa(MaxExponent) + ")"
	}
	return "not valid JSON"
}

// decoder counts the objects and booleans it decodes, up to limit (0: no limit).
type decoder struct {
	limit, nodes int
	path         []string
}

func decode(text string) (any, error) {
	var d decoder
	return d.decode(text)
}

func (d *decoder) decode(text string) (any, error) {
	if !gjson.Valid(text) {
		return nil, &decodeError{why: whySyntax}
	}
	return d.value(gjson.Parse(text))
}

func (d *decoder) value(r gjson.Result) (any, error) {
	if r.Type == gjson.True || r.Type == gjson.False || r.IsObject() {
		d.nodes++
		if d.limit > 0 && d.nodes > d.limit {
			return nil, &decodeError{why: whyNodes}
		}
	}
	path := &d.path
	switch r.Type {
	case gjson.Null:
		return nil, nil
	case gjson.False:
		return false, nil
	case gjson.True:
		return true, nil
	case gjson.Number:
		if !numberInRange(r.Raw) {
			return nil, &decodeError{why: whyNumber, path: clonePath(*path)}
		}
		return json.Number(r.Raw), nil
	case gjson.String:
		return r.Str, nil
	}
	if len(*path) >= MaxDepth {
		return nil, &decodeError{why: whyDepth, path: clonePath(*path)}
	}
	var err error
	if r.IsArray() {
		arr := []any{}
		i := 0
		r.ForEach(func(_, v gjson.Result) bool {
			*path = append(*path, strconv.Itoa(i))
			var x any
			x, err = d.value(v)
			*path = (*path)[:len(*path)-1]
			arr = append(arr, x)
			i++
			return err == nil
		})
		return arr, err
	}
	obj := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool {
		*path = append(*path, k.Str)
		defer func() { *path = (*path)[:len(*path)-1] }()
		if _, dup := obj[k.Str]; dup {
			err = &decodeError{why: whyDuplicate, path: clonePath(*path)}
			return false
		}
		var x any
		x, err = d.value(v)
		obj[k.Str] = x
		return err == nil
	})
	return obj, err
}

func clonePath(p []string) []string { return append([]string(nil), p...) }

// numberInRange reports whether a JSON number literal is within
// MaxNumberChars and its exponent within ±MaxExponent.
func numberInRange(raw string) bool {
	if len(raw) > MaxNumberChars {
		return false
	}
	i := strings.IndexAny(raw, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(strings.TrimPrefix(raw[i+1:], "+"))
	return err == nil && e >= -MaxExponent && e <= MaxExponent
}
