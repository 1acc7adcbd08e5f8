package jsonschema

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidate compiles arbitrary schemas and validates arbitrary documents.
// Nothing may panic, and results must be deterministic and well formed.
// Seeds live in testdata/fuzz/FuzzValidate as well as below.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"integer","maximum":3}},"additionalProperties":false}`), []byte(`{"a":5,"b":1}`))
	f.Add([]byte(`{"items":{"enum":[1,"x",{"k":[null]}]},"minItems":1}`), []byte(`[1,"x",{"k":[null]},2]`))
	f.Add([]byte(`{"anyOf":[{"pattern":"^a"},{"format":"email"}],"oneOf":[{"minLength":1},{"maxLength":3}]}`), []byte(`"ab@c.d"`))
	f.Add([]byte(`{"properties":{"d":{"format":"date-time"},"u":{"format":"uri"},"i":{"format":"uuid"}}}`), []byte(`{"d":"2024-01-01T00:00:00Z","u":"x:y","i":"?"}`))
	f.Add([]byte(`{"const":{"a":[1,2.0]},"allOf":[true,{"type":["object","null"]}]}`), []byte(`{"a":[1,2],"a":3}`))
	f.Add([]byte(`{"exclusiveMinimum":0,"exclusiveMaximum":1e2}`), []byte(`1e400`))
	f.Add([]byte(`{}`), []byte(`{"a":`))
	f.Add([]byte(`{"$defs":{"n":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`), []byte(`{"c":[{"c":[1]}]}`))
	f.Add([]byte(`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"format":"hostname"}},"items":{"$ref":"#/definitions/a"}}`), []byte(`["-x",""]`))
	f.Add([]byte(`{"properties":{"o":{"anyOf":[{"$ref":"#/$defs/O"},{"type":"null"}]}},"$defs":{"O":{"required":["k"]}}}`), []byte(`{"o":{}}`))
	f.Add([]byte(`{"$ref":"https://example.com/x.json"}`), []byte(`1`))
	f.Add([]byte(`{"$id":"https://e.com/a","$defs":{"b":{"$anchor":"b","minimum":1}},"$ref":"#b"}`), []byte(`0`))
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		s, err := Compile(schema)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "jsonschema: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		first := s.Validate(doc)
		again := s.Validate(doc)
		if !slices.Equal(first, again) {
			t.Fatalf("not deterministic:\n%v\n%v", first, again)
		}
		if alt := s.ValidateString(string(doc)); !slices.Equal(first, alt) {
			t.Fatalf("ValidateString differs:\n%v\n%v", first, alt)
		}
		for _, e := range first {
			if e.Keyword == "" || e.Message == "" {
				t.Fatalf("incomplete error %#v", e)
			}
			if e.Keyword == "json" && len(first) != 1 {
				t.Fatalf("json error mixed with others: %v", first)
			}
			if utf8.Valid(schema) && utf8.Valid(doc) && !utf8.ValidString(e.Path) {
				t.Fatalf("invalid UTF-8 path %q", e.Path)
			}
		}
	})
}
