package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// DecodeStrict decodes the JSON document data into v, which must be a
// non-nil pointer, like json.Unmarshal but refusing what encoding/json lets
// through silently and what would let two readers of the same bytes see two
// different documents:
//
//   - a key that appears twice in one object, at any depth (encoding/json
//     keeps the last, gjson and many other readers the first);
//   - a key that names a field of the target struct only case-insensitively
//     ("Capabilities" for "capabilities"; encoding/json would take it);
//   - a key the target struct does not have;
//   - anything but whitespace after the document.
//
// Objects decoded into maps, interfaces, json.RawMessage or a type with its
// own UnmarshalJSON are checked for duplicate keys only. The error wraps
// ErrDuplicateKey, ErrKeyCase or ErrUnknownKey and names the key and where
// it is ("$.tools[0]"), or wraps encoding/json's own error.
func DecodeStrict(data []byte, v any) error {
	if err := decodeStrict(data, v); err != nil {
		return fmt.Errorf("abi: strict json: %w", err)
	}
	return nil
}

// CheckDuplicateKeys reports the first object in the JSON document data that
// holds a key twice, wrapping ErrDuplicateKey; a document that is not JSON
// is an error too.
func CheckDuplicateKeys(data []byte) error {
	if valid, dup, _ := scanJSON(data); valid && !dup {
		return nil
	}
	if err := walkStrict(data, nil); err != nil {
		return fmt.Errorf("abi: strict json: %w", err)
	}
	return nil // walkStrict has the last word over the fast scan
}

// decodeStrict is DecodeStrict without the package prefix, for callers that
// add their own.
func decodeStrict(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode into %T: not a non-nil pointer", v)
	}
	if err := walkStrict(data, rv.Type().Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func walkStrict(data []byte, t reflect.Type) error {
	w := &strictWalker{dec: json.NewDecoder(bytes.NewReader(data))}
	if err := w.value(t); err != nil {
		return err
	}
	// Only whitespace may follow: more would let a stray "}" through.
	if _, err := w.dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// strictWalker walks a document token by token along the Go type it will be
// decoded into. path holds the segments of where it is, rendered only for
// an error.
type strictWalker struct {
	dec  *json.Decoder
	path []string
}

func (w *strictWalker) where() string {
	return "$" + strings.Join(w.path, "")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
)

// shape reduces t to what decides how its JSON is read: pointers are
// followed, and a type that decodes itself is nil (any document).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessage || t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	return t
}

// token is the next token; the end of the input inside a document is an
// error.
func (w *strictWalker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return tok, err
}

func (w *strictWalker) value(t reflect.Type) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = shape(t)
	switch d {
	case '{':
		return w.object(t)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			w.path = append(w.path, "["+strconv.Itoa(i)+"]")
			if err := w.value(elem); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		_, err := w.token() // ']'
		return err
	}
	return fmt.Errorf("unexpected %v", d)
}

func (w *strictWalker) object(t reflect.Type) error {
	var fields *structFields
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	var seen map[string]struct{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if _, dup := seen[key]; dup {
			return fmt.Errorf("%w %q in %s", ErrDuplicateKey, key, w.where())
		}
		if seen == nil {
			seen = map[string]struct{}{}
		}
		seen[key] = struct{}{}
		ft := elem
		if fields != nil {
			f, ok := fields.exact[key]
			if !ok {
				for _, name := range fields.names {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("%w: %q in %s must be spelled %q", ErrKeyCase, key, w.where(), name)
					}
				}
				return fmt.Errorf("%w %q in %s", ErrUnknownKey, key, w.where())
			}
			ft = f
		}
		w.path = append(w.path, "."+key)
		if err := w.value(ft); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
	_, err := w.token() // '}'
	return err
}

// structFields are the JSON keys of a struct type and the type each decodes
// into, as encoding/json sees them (tags, "-", embedded structs).
type structFields struct {
	exact map[string]reflect.Type
	names []string
}

var fieldCache sync.Map // reflect.Type -> *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{exact: map[string]reflect.Type{}}
	addFields(f, t, 0)
	fieldCache.Store(t, f)
	return f
}

func addFields(f *structFields, t reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				addFields(f, et, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := f.exact[name]; dup {
			continue
		}
		f.exact[name] = sf.Type
		f.names = append(f.names, name)
	}
}

// hasDuplicateKey reports whether some object of data, which must be valid
// JSON (json.Valid), holds a key twice. It is the fast path of the check a
// plugin's every result goes through: no token values, no allocation unless
// a key is escaped or an object is large; walkStrict then says where.
func hasDuplicateKey(data []byte) bool {
	s := dupScanner{data: data}
	return s.value()
}

type dupScanner struct {
	data []byte
	i    int
	keys [][]byte // the keys of the objects being scanned, innermost last
}

func (s *dupScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str scans a string at s.i and returns its content and whether it holds
// an escape.
func (s *dupScanner) str() ([]byte, bool) {
	s.i++ // '"'
	start, esc := s.i, false
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '\\':
			esc = true
			s.i += 2
			continue
		case '"':
			b := s.data[start:s.i]
			s.i++
			return b, esc
		}
		s.i++
	}
	return s.data[start:], esc
}

func (s *dupScanner) value() bool {
	s.ws()
	if s.i >= len(s.data) {
		return false
	}
	switch s.data[s.i] {
	case '{':
		return s.object()
	case '[':
		s.i++
		for {
			s.ws()
			if s.i >= len(s.data) || s.data[s.i] == ']' {
				s.i++
				return false
			}
			if s.value() {
				return true
			}
			s.ws()
			if s.i < len(s.data) && s.data[s.i] == ',' {
				s.i++
			}
		}
	case '"':
		s.str()
		return false
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return false
		}
		s.i++
	}
	return false
}

// linearKeys is how many keys of one object are compared pairwise before a
// map takes over.
const linearKeys = 16

func (s *dupScanner) object() bool {
	s.i++ // '{'
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	var seen map[string]struct{}
	for {
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] == '}' {
			s.i++
			return false
		}
		key, esc := s.str()
		if esc {
			var k string
			if json.Unmarshal(s.data[s.i-len(key)-2:s.i], &k) == nil {
				key = []byte(k)
			}
		}
		switch n := len(s.keys) - base; {
		case seen != nil:
			if _, dup := seen[string(key)]; dup {
				return true
			}
			seen[string(key)] = struct{}{}
		case n < linearKeys:
			for _, k := range s.keys[base:] {
				if bytes.Equal(k, key) {
					return true
				}
			}
			s.keys = append(s.keys, key)
		default:
			seen = make(map[string]struct{}, 2*n)
			for _, k := range s.keys[base:] {
				seen[string(k)] = struct{}{}
			}
			if _, dup := seen[string(key)]; dup {
				return true
			}
			seen[string(key)] = struct{}{}
		}
		s.ws()
		s.i++ // ':'
		if s.value() {
			return true
		}
		s.ws()
		if s.i < len(s.data) && s.data[s.i] == ',' {
			s.i++
		}
	}
}
