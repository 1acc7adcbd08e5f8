package jsonschema

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fastSchemaText is a tool schema of the fast keywords only: BenchmarkChain's.
const fastSchemaText = `{"type":"object","additionalProperties":false,"required":["spaceId","keywords"],"properties":{
  "spaceId":{"type":"integer","minimum":1},"keywords":{"type":"string","maxLength":200},
  "filters":{"type":"array","maxItems":20,"items":{"type":"object","additionalProperties":false,"required":["field","op","value"],
    "properties":{"field":{"type":"string"},"op":{"type":"string","enum":["eq","ne","gt","lt","in"]},"value":{"type":"string"}}}}}}`

// TestFastForm: which schemas get a fast form.
func TestFastForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema string
		fast         bool
	}{
		{"tool schema", fastSchemaText, true},
		{"empty", `{}`, true},
		{"true", `true`, true},
		{"false", `false`, false},
		{"annotations", `{"title":"T","description":"d","default":1,"examples":[1],"$comment":"c","readOnly":true,"deprecated":false}`, true},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string"}`, true},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}`, true},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"string"}`, false},
		{"$schema below the root", `{"properties":{"a":{"$schema":"https://json-schema.org/draft/2020-12/schema"}}}`, false},
		{"type list", `{"type":["string","null"]}`, true},
		{"const string", `{"const":"x"}`, true},
		{"enum and const", `{"enum":["x"],"const":"x"}`, false},
		{"ref", `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`, false},
		{"anyOf", `{"anyOf":[{"type":"string"}]}`, false},
		{"format", `{"type":"string","format":"email"}`, true},
		{"unknown format", `{"type":"string","format":"phone-number"}`, true},
		{"format regex", `{"type":"string","format":"regex"}`, false},
		{"pattern", `{"type":"string","pattern":"^a"}`, true},
		{"pattern in 2019-09 items", `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":{"pattern":"^a"}}`, true},
		{"pattern in draft-07 items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":{"format":"date"}}`, true},
		{"patternProperties", `{"patternProperties":{"^a":{}}}`, false},
		{"unknown keyword", `{"type":"string","nullable":true}`, false},
		{"fractional bound", `{"minimum":0.5}`, false},
		{"bound past int64", `{"maximum":9223372036854775808}`, false},
		{"tuple items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}`, false},
		{"false below", `{"properties":{"a":false}}`, false},
		{"additionalProperties schema", `{"additionalProperties":{"type":"integer"}}`, true},
		{"unevaluatedProperties", `{"unevaluatedProperties":false}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := MustCompile(tc.schema)
			if got := s.fast != nil; got != tc.fast {
				t.Fatalf("fast form: got %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestFastAnswers: what the fast form is sure of, and that the full path
// agrees wherever it is (and reports the same errors where it is not).
func TestFastAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 201)
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for _, tc := range []struct {
		name, schema, doc string
		sure              bool // the fast form answers valid
	}{
		{"tool args", fastSchemaText, `{"spaceId":42,"keywords":"spring","filters":[{"field":"a","op":"eq","value":"x"}]}`, true},
		{"escaped key", fastSchemaText, `{"space\u0049d":42,"keywords":"k"}`, false},
		{"escaped string that does not count", `{"properties":{"a":{"type":"string"}}}`, `{"a":"x\"y\u00e9\n","b":["\\"]}`, true},
		{"bad escape", `{}`, `["\x"]`, false},
		{"control character", `{}`, "[\"a\tb\"]", false},
		{"short unicode escape", `{}`, `["\u12"]`, false},
		{"trailing text", `{}`, `{} x`, false},
		{"leading zero", `{}`, `[01]`, false},
		{"bare minus", `{}`, `[-]`, false},
		{"fraction without digits", `{}`, `[1.]`, false},
		{"exponent without digits", `{}`, `[1e+]`, false},
		{"literal run on", `{}`, `[truex]`, false},
		{"missing colon", `{}`, `{"a" 1}`, false},
		{"trailing comma", `{}`, `[1,]`, false},
		{"whitespace everywhere", `{"properties":{"a":{"type":"array","items":{"type":"integer"}}}}`, " \r\n\t{ \"a\" : [ 1 , -2 ] , \"b\" : { } } \n", true},
		{"missing required", fastSchemaText, `{"spaceId":42}`, false},
		{"not allowed", fastSchemaText, `{"spaceId":42,"keywords":"k","x":1}`, false},
		{"below minimum", fastSchemaText, `{"spaceId":0,"keywords":"k"}`, false},
		{"integer as 2.0", fastSchemaText, `{"spaceId":2.0,"keywords":"k"}`, false},
		{"integer as 1e3", fastSchemaText, `{"spaceId":1e3,"keywords":"k"}`, false},
		{"too long in runes", fastSchemaText, `{"spaceId":1,"keywords":"` + long + `"}`, false},
		{"200 runes, 400 bytes", fastSchemaText, `{"spaceId":1,"keywords":"` + long[2:] + `"}`, true},
		{"enum miss", fastSchemaText, `{"spaceId":1,"keywords":"k","filters":[{"field":"a","op":"xx","value":"x"}]}`, false},
		{"repeated key", fastSchemaText, `{"spaceId":1,"keywords":"k","spaceId":2}`, false},
		{"repeated key, escaped", fastSchemaText, `{"spaceId":1,"keywords":"k","\u0073paceId":1}`, false},
		{"repeated key under true", `{}`, `{"a":{"b":1,"b":1}}`, false},
		{"repeated key past 16", `{}`, `{"k0":0,"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"ka":0,"kb":0,"kc":0,"kd":0,"ke":0,"kf":0,"kg":0,"kg":0}`, false},
		{"17 keys", `{"maxProperties":17,"minProperties":17}`, `{"k0":0,"k1":0,"k2":0,"k3":0,"k4":0,"k5":0,"k6":0,"k7":0,"k8":0,"k9":0,"ka":0,"kb":0,"kc":0,"kd":0,"ke":0,"kf":0,"kg":0}`, true},
		{"too deep", `{}`, deep, false},
		{"number too long", `{}`, `[1` + strings.Repeat("0", MaxNumberChars) + `]`, false},
		{"exponent too large", `true`, `1e1001`, false},
		{"not JSON", `{}`, `{"a":}`, false},
		{"max items", `{"maxItems":1}`, `[1,2]`, false},
		{"min items", `{"minItems":2,"items":{"type":"integer"}}`, `[1,2]`, true},
		{"exclusive bounds", `{"exclusiveMinimum":0,"exclusiveMaximum":10}`, `10`, false},
		{"exclusive bounds in", `{"exclusiveMinimum":0,"exclusiveMaximum":10}`, `9`, true},
		{"minus zero", `{"type":"integer","minimum":0,"maximum":0}`, `-0`, true},
		{"integer past int64", `{"type":"integer","maximum":5}`, `99999999999999999999`, false},
		{"decimal in bounds", `{"exclusiveMinimum":0,"maximum":1}`, `0.25`, true},
		{"decimal as exponent", `{"minimum":0}`, `2.5e-3`, true},
		{"decimal at a bound", `{"maximum":1}`, `1.0`, false},
		{"decimal a hair past a bound", `{"maximum":1}`, `1.00000000000000000000001`, false},
		{"decimal a hair below a bound", `{"minimum":1}`, `0.99999999999999999999999`, false},
		{"decimal past a bound", `{"exclusiveMaximum":-3}`, `-2.5`, false},
		{"decimal beyond float64", `{"minimum":0}`, `1e400`, false},
		{"bound past 2^53", `{"minimum":9007199254740993}`, `9007199254740993.5`, false},
		{"bound past 2^53, integer literal", `{"minimum":9007199254740993}`, `9007199254740993`, true},
		{"const", `{"const":"a'b"}`, `"a'b"`, true},
		{"const escaped", `{"const":"a\"b"}`, `"a\"b"`, false},
		{"const other value", `{"const":"1"}`, `1`, false},
		{"enum of numbers", `{"enum":[1,2]}`, `1`, false},
		{"type list null", `{"type":["string","null"]}`, `null`, true},
		{"additional schema", `{"additionalProperties":{"type":"integer"}}`, `{"a":1,"b":"x"}`, false},
		{"additional schema ok", `{"additionalProperties":{"type":"integer"}}`, `{"a":1,"b":2}`, true},
		{"min length", `{"minLength":2}`, `"é"`, false},
		{"boolean", `{"type":"boolean"}`, `false`, true},
		{"format", `{"properties":{"h":{"format":"hostname"},"d":{"format":"date-time"}}}`, `{"h":"example.com","d":"2026-12-06T10:00:00Z"}`, true},
		{"format bad", `{"properties":{"h":{"format":"hostname"}}}`, `{"h":"-x-"}`, false},
		{"format bad date", `{"format":"date"}`, `"2026-02-30"`, false},
		{"format on a number", `{"format":"email"}`, `1`, false},
		{"unknown format", `{"format":"phone-number"}`, `"x"`, true},
		{"pattern", `{"pattern":"^[A-Z0-9]{6,12}$"}`, `"AB12CD"`, true},
		{"pattern unanchored", `{"pattern":"b"}`, `"abc"`, true},
		{"pattern miss", `{"pattern":"^[A-Z0-9]{6,12}$"}`, `"ab"`, false},
		{"pattern in 2019-09 items", `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":{"pattern":"^a"}}`, `["ab","b"]`, false},
		{"format in draft-07 items", `{"$schema":"http://json-schema.org/draft-07/schema#","items":{"format":"date"}}`, `["2026-01-01"]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := MustCompile(tc.schema)
			if s.fast == nil {
				t.Fatal("no fast form")
			}
			if got := s.fast.validFast(tc.doc); got != tc.sure {
				t.Fatalf("validFast: got %v, want %v", got, tc.sure)
			}
			full := s.validateFull(tc.doc)
			if tc.sure && full != nil {
				t.Fatalf("fast path sure, full path says %v", full)
			}
			if got := s.ValidateString(tc.doc); !slices.Equal(got, full) {
				t.Fatalf("ValidateString %v, full path %v", got, full)
			}
		})
	}
}

// FuzzFastAgrees: whatever the fast form is sure of, the full path finds
// valid too, and ValidateString answers as the full path. The corpus in
// testdata/fuzz/FuzzFastAgrees is of schemas that have a fast form.
func FuzzFastAgrees(f *testing.F) {
	f.Add(fastSchemaText, `{"spaceId":42,"keywords":"spring","filters":[{"field":"a","op":"eq","value":"x"}]}`)
	f.Add(`{"type":["integer","string"],"minimum":-3,"maxLength":2,"enum":["a","bb"]}`, `"bb"`)
	f.Add(`{"additionalProperties":{"type":"array","minItems":1,"items":{"const":"x"}},"required":["a"],"maxProperties":2}`, `{"a":["x"],"b":["x","x"]}`)
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"n":{"type":"number","exclusiveMaximum":7}}}`, `{"n":6.5,"m":{"x":[1e5,null,true]}}`)
	f.Add(`{}`, `{"a":{"b":[1,{"c":"\u00e9"}]},"d":-0}`)
	f.Add(`{"type":"object","minProperties":1}`, `{"\u0061":1,"a":2}`)
	f.Add(`{"items":{"minimum":-1,"exclusiveMaximum":2}}`, `[0.5,-1.0,1.9999999999999999999,2e0,-0.99e0]`)
	f.Add(`{"items":{"format":"ipv4","pattern":"^1"}}`, `["1.2.3.4","10.0.0.256"]`)
	f.Add(`{"properties":{"u":{"format":"uuid"},"e":{"format":"email"},"t":{"format":"time"}}}`, `{"u":"6a2f41a3-c54c-fce8-32d2-0324e1c32e22","e":"a@b.c","t":"10:00:00Z"}`)
	f.Fuzz(func(t *testing.T, schema, doc string) {
		s, err := Compile([]byte(schema))
		if err != nil || s.fast == nil {
			return
		}
		full := s.validateFull(doc)
		if s.fast.validFast(doc) && full != nil {
			t.Fatalf("fast path sure of %q against %s, full path says %v", doc, schema, full)
		}
		// Compared as sets: the full path's order of errors under property
		// names made of digits beside other names depends on the library's
		// map order (a numeric name compares as an array index).
		got := s.ValidateString(doc)
		byText := func(a, b Error) int { return strings.Compare(a.Error()+a.Keyword, b.Error()+b.Keyword) }
		slices.SortFunc(got, byText)
		slices.SortFunc(full, byText)
		if !slices.Equal(got, full) {
			t.Fatalf("ValidateString %v, full path %v", got, full)
		}
	})
}

// BenchmarkFastPath validates BenchmarkChain's arguments (1 KB, twenty
// filter objects) against its schema, by the fast form and by the full path.
func BenchmarkFastPath(b *testing.B) {
	s := MustCompile(fastSchemaText)
	var filters []string
	for i := 0; len(strings.Join(filters, ",")) < 960; i++ {
		filters = append(filters, fmt.Sprintf(`{"field":"tag_%02d","op":"eq","value":"campaign-spring-%04d"}`, i, i))
	}
	doc := `{"spaceId":42,"keywords":"spring launch campaign","filters":[` + strings.Join(filters, ",") + `]}`
	if s.fast == nil || !s.fast.validFast(doc) {
		b.Fatal("no fast answer")
	}
	for _, side := range []struct {
		name string
		run  func(string) []Error
	}{{"fast", s.ValidateString}, {"full", s.validateFull}} {
		b.Run(side.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if errs := side.run(doc); errs != nil {
					b.Fatal(errs)
				}
			}
		})
	}
}
