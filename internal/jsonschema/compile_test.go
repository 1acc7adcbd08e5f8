//go:build !jsonschema_nopattern

package jsonschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		schema string
		want   error
		text   string // exact Error() text
	}{
		{"empty", ``, ErrSchemaJSON, "jsonschema: schema is not valid JSON"},
		{"not json", `{"type":}`, ErrSchemaJSON, "jsonschema: schema is not valid JSON"},
		{"root array", `[]`, ErrNotSchema, "jsonschema: root: not a schema object: got array"},
		{"root bool", `true`, ErrNotSchema, "jsonschema: root: not a schema object: got boolean"},
		{"root string", `"x"`, ErrNotSchema, "jsonschema: root: not a schema object: got string"},
		{"unknown type", `{"properties":{"age":{"type":"int"}}}`, ErrType, `jsonschema: properties.age.type: invalid type: "int" is not a JSON type`},
		{"type number", `{"type":1}`, ErrType, "jsonschema: type: invalid type: want a type name or a non-empty array of them"},
		{"type empty array", `{"type":[]}`, ErrType, "jsonschema: type: invalid type: want a type name or a non-empty array of them"},
		{"type array of non-strings", `{"type":["string",1]}`, ErrType, "jsonschema: type: invalid type: want a type name or a non-empty array of them"},
		{"properties array", `{"properties":[]}`, ErrProperties, "jsonschema: properties: invalid properties: not an object"},
		{"property not schema", `{"properties":{"a":"string"}}`, ErrNotSchema, "jsonschema: properties.a: not a schema object: got string"},
		{"duplicate property", `{"properties":{"a":{},"a":{}}}`, ErrDuplicateKey, `jsonschema: properties: duplicate key: "a"`},
		{"duplicate keyword", `{"type":"string","type":"integer"}`, ErrDuplicateKey, `jsonschema: root: duplicate key: "type"`},
		{"required string", `{"required":"a"}`, ErrRequired, "jsonschema: required: invalid required: not an array"},
		{"required numbers", `{"required":["a",1]}`, ErrRequired, "jsonschema: required: invalid required: want an array of strings"},
		{"additionalProperties string", `{"additionalProperties":"no"}`, ErrAdditional, "jsonschema: additionalProperties: invalid additionalProperties: got string"},
		{"additionalProperties bad schema", `{"additionalProperties":{"type":"x"}}`, ErrType, `jsonschema: additionalProperties.type: invalid type: "x" is not a JSON type`},
		{"items tuple", `{"items":[{}]}`, ErrItems, "jsonschema: items: invalid items: tuple form is not supported"},
		{"items number", `{"items":3}`, ErrItems, "jsonschema: items: invalid items: got number"},
		{"items bad nested", `{"items":{"minLength":-1}}`, ErrCount, "jsonschema: items.minLength: invalid count: want a non-negative integer"},
		{"minItems negative", `{"minItems":-1}`, ErrCount, "jsonschema: minItems: invalid count: want a non-negative integer"},
		{"maxItems fraction", `{"maxItems":1.5}`, ErrCount, "jsonschema: maxItems: invalid count: want a non-negative integer"},
		{"minLength string", `{"minLength":"3"}`, ErrCount, "jsonschema: minLength: invalid count: want a non-negative integer"},
		{"maxLength huge", `{"maxLength":1e300}`, ErrCount, "jsonschema: maxLength: invalid count: want a non-negative integer"},
		{"minimum string", `{"minimum":"0"}`, ErrNumber, "jsonschema: minimum: invalid number bound: want a finite number"},
		{"maximum infinite", `{"maximum":1e999}`, ErrNumber, "jsonschema: maximum: invalid number bound: want a finite number"},
		{"exclusiveMaximum null", `{"exclusiveMaximum":null}`, ErrNumber, "jsonschema: exclusiveMaximum: invalid number bound: want a finite number"},
		{"min above max", `{"minimum":5,"maximum":4}`, ErrRange, "jsonschema: root: empty range: minimum is greater than maximum"},
		{"exclusive empty", `{"exclusiveMinimum":4,"maximum":4}`, ErrRange, "jsonschema: root: empty range: the numeric bounds exclude every value"},
		{"minItems above maxItems", `{"properties":{"a":{"minItems":3,"maxItems":2}}}`, ErrRange, "jsonschema: properties.a: empty range: minItems is greater than maxItems"},
		{"minLength above maxLength", `{"minLength":3,"maxLength":2}`, ErrRange, "jsonschema: root: empty range: minLength is greater than maxLength"},
		{"enum not array", `{"enum":"a"}`, ErrEnum, "jsonschema: enum: invalid enum: not an array"},
		{"enum empty", `{"enum":[]}`, ErrEnum, "jsonschema: enum: invalid enum: empty array"},
		{"pattern number", `{"pattern":5}`, ErrPattern, "jsonschema: pattern: invalid pattern: not a string"},
		{"pattern bad regex", `{"pattern":"a("}`, ErrPattern, "jsonschema: pattern: invalid pattern: error parsing regexp: missing closing ): `a(`"},
		{"pattern lookahead", `{"pattern":"(?=a)"}`, ErrPattern, "jsonschema: pattern: invalid pattern: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{"format unknown", `{"format":"phone"}`, ErrFormat, `jsonschema: format: unknown format: "phone"`},
		{"format number", `{"format":1}`, ErrFormat, "jsonschema: format: unknown format: not a string"},
		{"anyOf empty", `{"anyOf":[]}`, ErrCombinator, "jsonschema: anyOf: invalid combinator: want a non-empty array of schemas"},
		{"oneOf object", `{"oneOf":{}}`, ErrCombinator, "jsonschema: oneOf: invalid combinator: want a non-empty array of schemas"},
		{"allOf bad member", `{"allOf":[{},1]}`, ErrNotSchema, "jsonschema: allOf.1: not a schema object: got number"},
		{"ref", `{"properties":{"a":{"$ref":"#/$defs/a"}}}`, ErrUnsupported, "jsonschema: properties.a.$ref: unsupported keyword: references are not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.schema))
			if err == nil {
				t.Fatalf("Compile(%s) = %v, want error", tc.schema, s)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %q does not wrap %q", err, tc.want)
			}
			if err.Error() != tc.text {
				t.Errorf("error text\n got: %s\nwant: %s", err, tc.text)
			}
		})
	}
}

func TestCompileTooDeep(t *testing.T) {
	t.Parallel()
	schema := strings.Repeat(`{"items":`, MaxDepth+2) + `{}` + strings.Repeat(`}`, MaxDepth+2)
	if _, err := Compile([]byte(schema)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("err = %v, want ErrTooDeep", err)
	}
	ok := strings.Repeat(`{"items":`, MaxDepth-1) + `{}` + strings.Repeat(`}`, MaxDepth-1)
	if _, err := Compile([]byte(ok)); err != nil {
		t.Fatalf("depth %d: %v", MaxDepth, err)
	}
}

func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d","default":1,"examples":[1],"nullable":true}`,
		`{"unknownKeyword":{"type":"nonsense"},"not":{"$ref":"x"},"$defs":{}}`,
		`{"type":"number","minimum":1,"maximum":1}`,
		`{"type":["integer","number"]}`,
		`{"required":["a","a"]}`,
		`{"additionalProperties":{},"items":true,"allOf":[true,false]}`,
		`{"format":"date-time"} `,
		`{"exclusiveMinimum":true}`,
	} {
		if _, err := Compile([]byte(schema)); err != nil {
			t.Errorf("Compile(%s): %v", schema, err)
		}
	}
}

func TestMustCompilePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile(`{"type":"int"}`)
}

func TestValidateResult(t *testing.T) {
	t.Parallel()
	s := MustCompile(`{"type":"object","required":["id"],"properties":{"id":{"type":"string","format":"uuid"}}}`)
	req := `{"tool":"x","args":{"id":"nope"}}`
	got := render(s.ValidateResult(gjson.Get(req, "args")))
	if want := `id: "nope" is not a valid uuid [format]`; len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
	if errs := s.ValidateResult(gjson.Get(req, "args")); len(errs) != 1 {
		t.Errorf("second call: %v", errs)
	}
	got = render(s.ValidateResult(gjson.Get(req, "missing")))
	if want := "document is missing [json]"; len(got) != 1 || got[0] != want {
		t.Errorf("missing: got %q", got)
	}
	if errs := s.ValidateResult(gjson.Parse(`{"id":"123e4567-e89b-12d3-a456-426614174000"}`)); errs != nil {
		t.Errorf("valid: %v", errs)
	}
}

// Errors must not alias the caller's buffer, which Validate reads without copying.
func TestErrorsDoNotAliasDocument(t *testing.T) {
	t.Parallel()
	s := MustCompile(`{"additionalProperties":false,"items":{"additionalProperties":false}}`)
	doc := []byte(`{"abc":1}`)
	errs := s.Validate(doc)
	copy(doc, `{"xyz":1}`)
	if len(errs) != 1 || errs[0].Error() != "abc: property is not allowed (additionalProperties is false)" {
		t.Fatalf("errors changed with the document: %v", errs)
	}
	doc = []byte(`[{"k":"v"}]`)
	errs = s.Validate(doc)
	copy(doc, `[{"q":"w"}]`)
	if len(errs) != 1 || errs[0].Path != "0.k" {
		t.Fatalf("errors changed with the document: %v", errs)
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	if got := (Error{Path: "a.b", Keyword: "x", Message: "m"}).Error(); got != "a.b: m" {
		t.Errorf("got %q", got)
	}
	if got := (Error{Keyword: "x", Message: "m"}).Error(); got != "m" {
		t.Errorf("got %q", got)
	}
}
