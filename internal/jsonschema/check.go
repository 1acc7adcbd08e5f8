package jsonschema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Check validates doc against the schema text and encodes the outcome for
// a guest (a missing document is validated as null):
//
//   - empty: the document is valid;
//   - "S" + message: the schema itself does not compile;
//   - "E" + one record per error, records separated by '\n', fields (path,
//     keyword, message) by '\x1f'.
//
// Inputs are bounded: a schema longer than MaxSchemaBytes is a schema
// error, a document longer than MaxDocBytes or nested deeper than MaxDepth
// is one error with keyword "limit". Compiled schemas are kept in [Shared].
//
// The encoding needs no JSON parser to read, because parsing inside a
// sandboxed guest is slow. Warden's host offers Check to plugins as a
// service, and the guest SDK's native runner calls it directly, so both see
// the same bytes.
func Check(schema string, doc gjson.Result) []byte {
	out, _ := CheckContext(context.Background(), schema, doc)
	return out
}

// CheckContext is Check within ctx, for a sandboxed caller: the compile
// (see [Cache.GetContext]) and the validation are charged to ctx's
// deadline. It returns an error wrapping ctx's error, and no encoding, when
// ctx ended first; every other outcome is in the encoding.
func CheckContext(ctx context.Context, schema string, doc gjson.Result) ([]byte, error) {
	s, err := Shared.GetContext(ctx, schema)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return append([]byte{'S'}, clean(err.Error())...), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jsonschema: validate: %w", err)
	}
	raw := doc.Raw
	if !doc.Exists() {
		raw = "null"
	}
	errs := s.ValidateString(raw)
	if len(errs) == 0 {
		return nil, nil
	}
	out := []byte{'E'}
	for i, e := range errs {
		if i > 0 {
			out = append(out, '\n')
		}
		out = append(out, clean(e.Path)...)
		out = append(out, 0x1f)
		out = append(out, clean(e.Keyword)...)
		out = append(out, 0x1f)
		out = append(out, clean(e.Message)...)
	}
	return out, nil
}

// clean keeps the record separators out of a field.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == 0x1f {
			return ' '
		}
		return r
	}, s)
}
