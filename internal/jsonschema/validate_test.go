package jsonschema

import (
	"slices"
	"testing"
)

// render formats errors as "path: message [keyword]" for exact comparison.
func render(errs []Error) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error()+" ["+e.Keyword+"]")
	}
	return out
}

type vcase struct {
	name   string
	schema string
	doc    string
	want   []string // nil: valid
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got := render(s.Validate([]byte(tc.doc)))
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate(%s)\n got: %q\nwant: %q", tc.doc, got, tc.want)
			}
			// The string and parsed variants must agree.
			if alt := render(s.ValidateString(tc.doc)); !slices.Equal(alt, got) && len(alt)+len(got) > 0 {
				t.Errorf("ValidateString disagrees: %q", alt)
			}
		})
	}
}

func TestType(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"string ok", `{"type":"string"}`, `"x"`, nil},
		{"string bad", `{"type":"string"}`, `1`, []string{"expected string, got number [type]"}},
		{"integer ok", `{"type":"integer"}`, `12`, nil},
		{"integer 2.0 ok", `{"type":"integer"}`, `2.0`, nil},
		{"integer 1e3 ok", `{"type":"integer"}`, `1e3`, nil},
		{"integer negative ok", `{"type":"integer"}`, `-7`, nil},
		{"integer fraction", `{"type":"integer"}`, `2.5`, []string{"expected integer, got number [type]"}},
		{"integer string", `{"properties":{"age":{"type":"integer"}}}`, `{"age":"3"}`, []string{"age: expected integer, got string [type]"}},
		{"number ok int", `{"type":"number"}`, `3`, nil},
		{"number ok frac", `{"type":"number"}`, `3.25`, nil},
		{"number bad", `{"type":"number"}`, `"3"`, []string{"expected number, got string [type]"}},
		{"boolean ok", `{"type":"boolean"}`, `false`, nil},
		{"boolean bad", `{"type":"boolean"}`, `"true"`, []string{"expected boolean, got string [type]"}},
		{"null ok", `{"type":"null"}`, `null`, nil},
		{"null bad", `{"type":"null"}`, `0`, []string{"expected null, got number [type]"}},
		{"object ok", `{"type":"object"}`, `{}`, nil},
		{"object bad", `{"type":"object"}`, `[]`, []string{"expected object, got array [type]"}},
		{"array ok", `{"type":"array"}`, `[1]`, nil},
		{"array bad", `{"type":"array"}`, `{}`, []string{"expected array, got object [type]"}},
		{"union ok", `{"type":["string","null"]}`, `null`, nil},
		{"union bad", `{"type":["string","null"]}`, `true`, []string{"expected string or null, got boolean [type]"}},
		{"union of three", `{"type":["string","integer","null"]}`, `1.5`, []string{"expected string, integer or null, got number [type]"}},
		{"type failure hides others", `{"type":"string","minLength":3,"enum":["abc"]}`, `5`, []string{"expected string, got number [type]"}},
		{"no type accepts all", `{}`, `[{"a":1}]`, nil},
		{"nullable ignored", `{"type":"string","nullable":true}`, `null`, []string{"expected string, got null [type]"}},
	})
}

func TestObject(t *testing.T) {
	t.Parallel()
	const tool = `{
		"type": "object",
		"additionalProperties": false,
		"required": ["title", "count"],
		"properties": {
			"title": {"type": "string", "description": "the title"},
			"count": {"type": "integer", "maximum": 10},
			"kind":  {"enum": ["a", "b"]}
		}
	}`
	runCases(t, []vcase{
		{"valid", tool, `{"title":"t","count":3,"kind":"a"}`, nil},
		{"required missing", tool, `{"count":3}`, []string{"title: required property is missing [required]"}},
		{"all missing", tool, `{}`, []string{
			"title: required property is missing [required]",
			"count: required property is missing [required]",
		}},
		{"extra property", tool, `{"title":"t","count":1,"extra":1}`, []string{
			"extra: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
		{"many errors in schema order", tool, `{"zzz":true,"kind":"c","count":12,"aaa":null}`, []string{
			"title: required property is missing [required]",
			"count: 12 is greater than the maximum 10 [maximum]",
			`kind: "c" is not one of ["a","b"] [enum]`,
			"zzz: property is not allowed (additionalProperties is false) [additionalProperties]",
			"aaa: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
		{"not an object", tool, `"x"`, []string{"expected object, got string [type]"}},
		{"object keywords skip non-objects", `{"required":["a"]}`, `[1]`, nil},
		{"additionalProperties true", `{"properties":{"a":{}},"additionalProperties":true}`, `{"b":1}`, nil},
		{"additionalProperties schema ok", `{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, `{"a":"x","b":1}`, nil},
		{"additionalProperties schema bad", `{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, `{"a":"x","b":"y","c":2}`, []string{
			"b: expected integer, got string [type]",
		}},
		{"required only name is still additional", `{"required":["x"],"additionalProperties":false}`, `{"x":1}`, []string{
			"x: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
		{"required only name missing", `{"properties":{"a":{}},"required":["x","a"]}`, `{}`, []string{
			"a: required property is missing [required]",
			"x: required property is missing [required]",
		}},
		{"duplicate key rejected", tool, `{"title":"t","count":1,"title":5}`, []string{
			"title: property appears more than once [json]",
		}},
		{"false property", `{"properties":{"secret":false}}`, `{"secret":1}`, []string{"secret: value is not allowed [false]"}},
		{"escaped key", `{"properties":{"a\"b":{"type":"string"}}}`, `{"a\"b":1}`, []string{`a"b: expected string, got number [type]`}},
		{"many properties use map lookup", manyProps, `{"p0":1,"p1":2,"p2":3,"p3":4,"p4":5,"p5":6,"p6":7,"p7":8,"p8":9,"p9":"x","q":1}`, []string{
			"p9: expected integer, got string [type]",
			"q: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
	})
}

const manyProps = `{"additionalProperties":false,"properties":{
	"p0":{"type":"integer"},"p1":{"type":"integer"},"p2":{"type":"integer"},"p3":{"type":"integer"},
	"p4":{"type":"integer"},"p5":{"type":"integer"},"p6":{"type":"integer"},"p7":{"type":"integer"},
	"p8":{"type":"integer"},"p9":{"type":"integer"}}}`

func TestNested(t *testing.T) {
	t.Parallel()
	const order = `{
		"type": "object",
		"required": ["lines"],
		"properties": {
			"customer": {
				"type": "object",
				"required": ["email"],
				"properties": {"email": {"type": "string", "format": "email"}}
			},
			"lines": {
				"type": "array",
				"minItems": 1,
				"items": {
					"type": "object",
					"additionalProperties": false,
					"required": ["goodsCode", "qty"],
					"properties": {
						"goodsCode": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$"},
						"qty": {"type": "integer", "minimum": 1},
						"tags": {"type": "array", "items": {"type": "string"}}
					}
				}
			}
		}
	}`
	runCases(t, []vcase{
		{"valid", order, `{"customer":{"email":"a@b.co"},"lines":[{"goodsCode":"AB1234","qty":2,"tags":["x"]}]}`, nil},
		{"deep errors", order, `{
			"customer": {"email": "x"},
			"lines": [
				{"goodsCode": "AB1234", "qty": 1},
				{"goodsCode": "ab12", "qty": 0, "tags": ["ok", 3], "note": "n"},
				{"qty": 1.5}
			]
		}`, []string{
			`customer.email: "x" is not a valid email [format]`,
			`lines.1.goodsCode: "ab12" does not match the pattern "^[A-Z]{2}[0-9]{4}$" [pattern]`,
			"lines.1.qty: 0 is less than the minimum 1 [minimum]",
			"lines.1.tags.1: expected string, got number [type]",
			"lines.1.note: property is not allowed (additionalProperties is false) [additionalProperties]",
			"lines.2.goodsCode: required property is missing [required]",
			"lines.2.qty: expected integer, got number [type]",
		}},
		{"empty lines", order, `{"lines":[]}`, []string{"lines: array has 0 items, fewer than the minimum 1 [minItems]"}},
		{"nested required", order, `{"customer":{},"lines":[{"goodsCode":"AB1234","qty":1}]}`, []string{
			"customer.email: required property is missing [required]",
		}},
		{"array of arrays", `{"items":{"items":{"type":"integer"}}}`, `[[1],[2,"x"],[]]`, []string{"1.1: expected integer, got string [type]"}},
	})
}

func TestArray(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"minItems ok", `{"minItems":2}`, `[1,2]`, nil},
		{"minItems bad", `{"minItems":2}`, `[1]`, []string{"array has 1 item, fewer than the minimum 2 [minItems]"}},
		{"maxItems ok", `{"maxItems":2}`, `[]`, nil},
		{"maxItems bad", `{"maxItems":2}`, `[1,2,3]`, []string{"array has 3 items, more than the maximum 2 [maxItems]"}},
		{"items ok", `{"items":{"type":"string"}}`, `["a","b"]`, nil},
		{"items bad", `{"items":{"type":"string"}}`, `["a",1,null]`, []string{
			"1: expected string, got number [type]",
			"2: expected string, got null [type]",
		}},
		{"items true", `{"items":true}`, `[1]`, nil},
		{"items false", `{"items":false}`, `[1]`, []string{"0: value is not allowed [false]"}},
		{"items false empty", `{"items":false}`, `[]`, nil},
		{"count and items", `{"maxItems":1,"items":{"type":"integer"}}`, `[1,"a"]`, []string{
			"array has 2 items, more than the maximum 1 [maxItems]",
			"1: expected integer, got string [type]",
		}},
		{"array keywords skip non-arrays", `{"minItems":3}`, `"abc"`, nil},
	})
}

func TestEnumConst(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"enum ok", `{"enum":["a","b"]}`, `"b"`, nil},
		{"enum bad", `{"properties":{"kind":{"enum":["a","b"]}}}`, `{"kind":"c"}`, []string{`kind: "c" is not one of ["a","b"] [enum]`}},
		{"enum numeric equality", `{"enum":[1,2.5]}`, `1.0`, nil},
		{"enum exponent", `{"enum":[100]}`, `1e2`, nil},
		{"enum type matters", `{"enum":[1]}`, `"1"`, []string{`"1" is not one of [1] [enum]`}},
		{"enum null", `{"enum":[null,"x"]}`, `null`, nil},
		{"enum bool", `{"enum":[true]}`, `false`, []string{"false is not one of [true] [enum]"}},
		{"enum object order", `{"enum":[{"a":1,"b":[1,2]}]}`, `{"b":[1,2.0],"a":1}`, nil},
		{"enum object differs", `{"enum":[{"a":1}]}`, `{"a":1,"b":2}`, []string{`{"a":1,"b":2} is not one of [{"a":1}] [enum]`}},
		{"enum array order", `{"enum":[[1,2]]}`, `[2,1]`, []string{"[2,1] is not one of [[1,2]] [enum]"}},
		{"enum array length", `{"enum":[[1,2]]}`, `[1,2,3]`, []string{"[1,2,3] is not one of [[1,2]] [enum]"}},
		{"enum compacts whitespace", `{"enum": [ "a" , "b c" ]}`, `[ 1, 2 ]`, []string{`[1,2] is not one of ["a","b c"] [enum]`}},
		{"enum big integers", `{"enum":[9007199254740993]}`, `9007199254740992`, []string{"9007199254740992 is not one of [9007199254740993] [enum]"}},
		{"enum escaped string", `{"enum":["é"]}`, `"\u00e9"`, nil},
		{"const ok", `{"const":{"x":[true,null]}}`, `{"x":[true,null]}`, nil},
		{"const bad", `{"const":"y"}`, `"x"`, []string{`"x" is not equal to the constant "y" [const]`}},
		{"const number", `{"const":5}`, `5.0`, nil},
		{"long value truncated", `{"const":"a"}`, `"` + string(make80('x')) + `"`, []string{
			`"` + string(make80('x'))[:63] + `..." is not equal to the constant "a" [const]`,
		}},
	})
}

func TestNumber(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"minimum ok", `{"minimum":5}`, `5`, nil},
		{"minimum bad", `{"minimum":5}`, `4.5`, []string{"4.5 is less than the minimum 5 [minimum]"}},
		{"maximum ok", `{"maximum":10}`, `10`, nil},
		{"maximum bad", `{"properties":{"count":{"maximum":10}}}`, `{"count":12}`, []string{"count: 12 is greater than the maximum 10 [maximum]"}},
		{"exclusiveMinimum ok", `{"exclusiveMinimum":0}`, `0.001`, nil},
		{"exclusiveMinimum bad", `{"exclusiveMinimum":0}`, `0`, []string{"0 is not greater than the exclusive minimum 0 [exclusiveMinimum]"}},
		{"exclusiveMaximum ok", `{"exclusiveMaximum":1}`, `0.99`, nil},
		{"exclusiveMaximum bad", `{"exclusiveMaximum":1}`, `1`, []string{"1 is not less than the exclusive maximum 1 [exclusiveMaximum]"}},
		{"draft4 exclusive", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":true,"maximum":3,"exclusiveMaximum":true}`, `3`, []string{"3 is not less than the exclusive maximum 3 [exclusiveMaximum]"}},
		{"draft4 exclusive false", `{"$schema":"http://json-schema.org/draft-04/schema#","minimum":1,"exclusiveMinimum":false}`, `1`, nil},
		{"both bounds fail order", `{"minimum":5,"exclusiveMinimum":6}`, `4`, []string{
			"4 is less than the minimum 5 [minimum]",
			"4 is not greater than the exclusive minimum 6 [exclusiveMinimum]",
		}},
		{"negative and fractional bounds", `{"minimum":-1.5,"maximum":-0.5}`, `-2`, []string{"-2 is less than the minimum -1.5 [minimum]"}},
		{"numeric keywords skip strings", `{"maximum":1}`, `"100"`, nil},
	})
}

func TestString(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"minLength ok", `{"minLength":2}`, `"ab"`, nil},
		{"minLength bad", `{"minLength":3}`, `"ab"`, []string{`"ab" is shorter than the minimum length 3 [minLength]`}},
		{"maxLength ok", `{"maxLength":2}`, `"ab"`, nil},
		{"maxLength bad", `{"maxLength":2}`, `"abc"`, []string{`"abc" is longer than the maximum length 2 [maxLength]`}},
		{"length in code points", `{"maxLength":2,"minLength":2}`, `"日本"`, nil},
		{"length counts escapes once", `{"maxLength":1}`, `"\u00e9"`, nil},
		{"pattern ok", `{"pattern":"^[a-z]+$"}`, `"abc"`, nil},
		{"pattern bad", `{"pattern":"^[a-z]+$"}`, `"aBc"`, []string{`"aBc" does not match the pattern "^[a-z]+$" [pattern]`}},
		{"pattern unanchored", `{"pattern":"[0-9]"}`, `"abc1def"`, nil},
		{"string keywords skip numbers", `{"minLength":3,"pattern":"x","format":"email"}`, `1`, nil},
		// const, enum and format stop the checks of their schema at the
		// first failure (the library's order), so only the format is reported.
		{"several string errors", `{"maxLength":1,"pattern":"^x","format":"uuid"}`, `"ab"`, []string{
			`"ab" is not a valid uuid [format]`,
		}},
	})
}

func TestFormatMessages(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"email", `{"properties":{"email":{"format":"email"}}}`, `{"email":"x"}`, []string{`email: "x" is not a valid email [format]`}},
		{"date-time", `{"format":"date-time"}`, `"2024-02-30T00:00:00Z"`, []string{`"2024-02-30T00:00:00Z" is not a valid date-time [format]`}},
		{"date", `{"format":"date"}`, `"2024-1-01"`, []string{`"2024-1-01" is not a valid date [format]`}},
		{"uri", `{"format":"uri"}`, `"/relative"`, []string{`"/relative" is not a valid uri [format]`}},
		{"uuid ok", `{"format":"uuid"}`, `"123E4567-e89b-12d3-a456-426614174000"`, nil},
	})
}

func TestCombinators(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"allOf ok", `{"allOf":[{"type":"integer"},{"minimum":1}]}`, `2`, nil},
		{"allOf reports each", `{"allOf":[{"type":"integer"},{"minimum":1},{"maximum":0}]}`, `0.5`, []string{
			"expected integer, got number [type]",
			"0.5 is less than the minimum 1 [minimum]",
			"0.5 is greater than the maximum 0 [maximum]",
		}},
		{"anyOf ok", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `3`, nil},
		{"anyOf bad", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, []string{"expected string or integer, got boolean [type]"}},
		{"anyOf of shapes", `{"anyOf":[{"type":"string","minLength":3},{"type":"integer","minimum":3}]}`, `2`, []string{"2 is less than the minimum 3 [minimum]"}},
		{"anyOf none close", `{"anyOf":[{"required":["a"]},{"required":["b"]}]}`, `{}`, []string{"does not match any of the allowed schemas (anyOf) [anyOf]"}},
		{"oneOf ok", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `"s"`, nil},
		{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `null`, []string{"expected string or integer, got null [type]"}},
		{"oneOf two", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `3`, []string{"matches more than one schema in oneOf [oneOf]"}},
		{"oneOf nested objects", `{"properties":{"pay":{"oneOf":[
			{"required":["card"],"properties":{"card":{"type":"string","minLength":4}}},
			{"required":["iban"]}
		]}}}`, `{"pay":{"card":"12"}}`, []string{"pay: does not match any of the allowed schemas (oneOf) [oneOf]"}},
		{"anyOf probes deep", `{"anyOf":[{"items":{"required":["a"]}},{"items":{"required":["b"]}}]}`, `[{"a":1},{"b":1}]`, []string{"does not match any of the allowed schemas (anyOf) [anyOf]"}},
		{"anyOf inside allOf", `{"allOf":[{"anyOf":[{"const":1},{"const":2}]},{"type":"integer"}]}`, `2`, nil},
		{"oneOf not confused by outer errors", `{"properties":{"a":{"type":"string"},"b":{"oneOf":[{"const":1},{"const":2}]}}}`, `{"a":1,"b":2}`, []string{"a: expected string, got number [type]"}},
	})
}

func TestInvalidDocument(t *testing.T) {
	t.Parallel()
	s := MustCompile(`{"type":"object","required":["a"]}`)
	for _, doc := range []string{``, `   `, `{`, `{"a":}`, `{"a":1,}`, `[1,2`, `nul`, `{"a":1} x`, "\"\x00\"", `'a'`, `{"a":NaN}`} {
		got := render(s.Validate([]byte(doc)))
		want := []string{"document is not valid JSON [json]"}
		if !slices.Equal(got, want) {
			t.Errorf("Validate(%q) = %q, want %q", doc, got, want)
		}
		if got := render(s.ValidateString(doc)); !slices.Equal(got, want) {
			t.Errorf("ValidateString(%q) = %q, want %q", doc, got, want)
		}
	}
}

func make80(c byte) []byte {
	b := make([]byte, 80)
	for i := range b {
		b[i] = c
	}
	return b
}
