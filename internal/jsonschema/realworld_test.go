package jsonschema

import (
	"errors"
	"testing"
)

// Schemas as MCP servers publish them.
const (
	// pydanticSchema is what pydantic (and so FastMCP) emits for a function
	// taking a model argument, an optional model and an enum.
	pydanticSchema = `{"$defs":{
		"Address":{"properties":{"city":{"title":"City","type":"string"},
			"zip":{"anyOf":[{"type":"string","pattern":"^[0-9]{5}$"},{"type":"null"}],"default":null,"title":"Zip"}},
			"required":["city"],"title":"Address","type":"object"},
		"Priority":{"enum":["low","high"],"title":"Priority","type":"string"}},
	"properties":{"name":{"title":"Name","type":"string"},"address":{"$ref":"#/$defs/Address"},
		"backup":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}],"default":null},
		"priority":{"$ref":"#/$defs/Priority","default":"low"},
		"tags":{"items":{"type":"string"},"title":"Tags","type":"array"}},
	"required":["name","address"],"title":"create_userArguments","type":"object"}`

	// fastmcpSchema is a FastMCP tool with a hostname and a bounded port.
	fastmcpSchema = `{"additionalProperties":false,"properties":{"host":{"format":"hostname","title":"Host","type":"string"},
		"port":{"default":22,"maximum":65535,"minimum":1,"title":"Port","type":"integer"}},"required":["host"],"type":"object"}`

	formatsSchema = `{"type":"object","properties":{"host":{"type":"string","format":"hostname"},"email":{"type":"string","format":"email"},
		"uri":{"type":"string","format":"uri"},"at":{"type":"string","format":"date-time"},"ip":{"type":"string","format":"ipv4"},
		"id":{"type":"string","format":"uuid"},"phone":{"type":"string","format":"phone-number"}}}`

	// draft7Schema is a draft-07 schema with definitions, as zod-to-json-schema emits.
	draft7Schema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
		"definitions":{"Line":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","exclusiveMinimum":0}},
			"additionalProperties":false}},
		"properties":{"lines":{"type":"array","items":{"$ref":"#/definitions/Line"},"minItems":1},
			"note":{"type":"string"}},
		"required":["lines"]}`

	// treeSchema is recursive: a node's children are nodes.
	treeSchema = `{"$defs":{"node":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},
		"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`

	// anchorSchema refers by $anchor and by $id.
	anchorSchema = `{"$id":"https://example.com/order.json","$defs":{"qty":{"$anchor":"qty","type":"integer","minimum":1},
		"sku":{"$id":"sku.json","type":"string","minLength":3}},
		"properties":{"qty":{"$ref":"#qty"},"sku":{"$ref":"sku.json"}}}`
)

func TestRealWorldSchemas(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"pydantic valid", pydanticSchema, `{"name":"Ann","address":{"city":"Oslo","zip":null},"backup":null,"priority":"high","tags":["a"]}`, nil},
		{"pydantic valid, optional given", pydanticSchema, `{"name":"Ann","address":{"city":"Oslo","zip":"12345"},"backup":{"city":"Rome"}}`, nil},
		{"pydantic invalid", pydanticSchema, `{"name":"Ann","address":{"zip":"123"},"backup":{"city":5},"priority":"urgent","tags":"a"}`, []string{
			"address.city: required property is missing [required]",
			`address.zip: "123" does not match the pattern "^[0-9]{5}$" [pattern]`,
			"backup.city: expected string, got number [type]",
			`priority: "urgent" is not one of ["low","high"] [enum]`,
			"tags: expected array, got string [type]",
		}},
		{"pydantic optional of wrong type", pydanticSchema, `{"name":"Ann","address":{"city":"Oslo"},"backup":"Rome"}`, []string{
			"backup: expected object or null, got string [type]",
		}},
		{"pydantic missing model", pydanticSchema, `{"name":"Ann"}`, []string{"address: required property is missing [required]"}},
		{"fastmcp valid", fastmcpSchema, `{"host":"db-1.internal.example.com","port":5432}`, nil},
		{"fastmcp invalid", fastmcpSchema, `{"host":"-db_1-","port":70000,"user":"root"}`, []string{
			`host: "-db_1-" is not a valid hostname [format]`,
			"port: 70000 is greater than the maximum 65535 [maximum]",
			"user: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
		{"formats valid", formatsSchema, `{"host":"example.com","email":"a.b@example.com","uri":"https://example.com/a?b=c",` +
			`"at":"2024-05-01T08:00:00+08:00","ip":"192.168.0.1","id":"123e4567-e89b-12d3-a456-426614174000","phone":"not checked"}`, nil},
		{"formats invalid", formatsSchema, `{"host":"a..b","email":"a@","uri":"/relative","at":"2024-05-01 08:00","ip":"256.1.1.1","id":"42","phone":"?"}`, []string{
			`host: "a..b" is not a valid hostname [format]`,
			`email: "a@" is not a valid email [format]`,
			`uri: "/relative" is not a valid uri [format]`,
			`at: "2024-05-01 08:00" is not a valid date-time [format]`,
			`ip: "256.1.1.1" is not a valid ipv4 [format]`,
			`id: "42" is not a valid uuid [format]`,
		}},
		{"unknown format ignored", `{"type":"string","format":"x-internal-code"}`, `"anything"`, nil},
		{"draft-07 valid", draft7Schema, `{"lines":[{"sku":"A1","qty":2}]}`, nil},
		{"draft-07 invalid", draft7Schema, `{"lines":[{"sku":"A1","qty":0},{"qty":1,"note":"x"}]}`, []string{
			"lines.0.qty: 0 is not greater than the exclusive minimum 0 [exclusiveMinimum]",
			"lines.1.sku: required property is missing [required]",
			"lines.1.note: property is not allowed (additionalProperties is false) [additionalProperties]",
		}},
		{"draft-07 empty array", draft7Schema, `{"lines":[]}`, []string{"lines: array has 0 items, fewer than the minimum 1 [minItems]"}},
		{"recursive valid", treeSchema, `{"name":"root","children":[{"name":"a","children":[{"name":"b"}]}]}`, nil},
		{"recursive invalid", treeSchema, `{"name":"root","children":[{"name":"a","children":[{"name":"b"},{"children":[]}]},{"name":7}]}`, []string{
			"children.0.children.1.name: required property is missing [required]",
			"children.1.name: expected string, got number [type]",
		}},
		// Names that need escaping in a JSON pointer or a URI fragment are
		// still found in the schema text (bounds quoted as written) and keep
		// the schema's order.
		{"awkward property names", `{"properties":{"z z":{"maximum":1.50},"c/d":{"maximum":1.50},"e~f":{"maximum":1.50},"é%":{"maximum":1.50},"a.b":{"type":"string"}}}`,
			`{"a.b":1,"é%":2,"e~f":2,"c/d":2,"z z":2}`, []string{
				"z z: 2 is greater than the maximum 1.50 [maximum]",
				"c/d: 2 is greater than the maximum 1.50 [maximum]",
				"e~f: 2 is greater than the maximum 1.50 [maximum]",
				"é%: 2 is greater than the maximum 1.50 [maximum]",
				"a.b: expected string, got number [type]",
			}},
		{"anchor and id valid", anchorSchema, `{"qty":1,"sku":"abc"}`, nil},
		{"anchor and id invalid", anchorSchema, `{"qty":0,"sku":"ab"}`, []string{
			"qty: 0 is less than the minimum 1 [minimum]",
			`sku: "ab" is shorter than the minimum length 3 [minLength]`,
		}},
	})
}

// TestDraft7RefSiblings: before 2019-09 a $ref replaces its schema, so its
// siblings are ignored; from 2019-09 on they apply as well.
func TestDraft7RefSiblings(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{"draft-07 ignores siblings", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"c":{"type":"string"}},` +
			`"properties":{"code":{"$ref":"#/definitions/c","maxLength":1}}}`, `{"code":"abc"}`, nil},
		{"2020-12 applies siblings", `{"$defs":{"c":{"type":"string"}},"properties":{"code":{"$ref":"#/$defs/c","maxLength":1}}}`, `{"code":"abc"}`,
			[]string{`code: "abc" is longer than the maximum length 1 [maxLength]`}},
	})
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	deep := ""
	for range MaxDepth + 1 {
		deep += `{"not":`
	}
	deep += `{}`
	for range MaxDepth + 1 {
		deep += `}`
	}
	huge := `{"description":"` + repeat('x', MaxSchemaBytes) + `"}`
	for _, tc := range []struct {
		name, schema string
		sentinel     error
		msg          string
	}{
		{"remote ref", `{"properties":{"a":{"$ref":"https://example.com/schemas/a.json"}}}`, ErrRemoteRef,
			`jsonschema: remote reference refused: "https://example.com/schemas/a.json" is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched`},
		{"relative ref to another file", `{"$ref":"common.json#/$defs/id"}`, ErrRemoteRef,
			`jsonschema: remote reference refused: "common.json" is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched`},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, ErrRemoteRef,
			`jsonschema: remote reference refused: "file:///etc/passwd" is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched`},
		{"unknown $schema", `{"$schema":"https://example.com/my-meta","type":"object"}`, ErrRemoteRef,
			`jsonschema: remote reference refused: "https://example.com/my-meta" is outside the schema; only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched`},
		{"missing definition", `{"properties":{"a":{"$ref":"#/$defs/Missing"}}}`, ErrRef,
			`jsonschema: unresolved reference: "#/$defs/Missing" points at nothing in the schema`},
		{"bad type", `{"type":"object","properties":{"a":{"type":"bogus"}}}`, ErrInvalid,
			`jsonschema: schema does not conform to its draft: properties.a.type: "bogus" is not one of ["array","boolean","integer","null","number","object","string"]`},
		{"negative length", `{"maxLength":-1}`, ErrInvalid,
			`jsonschema: schema does not conform to its draft: maxLength: -1 is less than the minimum 0`},
		{"required not strings", `{"required":[1]}`, ErrInvalid,
			`jsonschema: schema does not conform to its draft: required.0: expected string, got number`},
		{"bad pattern", `{"properties":{"a":{"pattern":"(["}}}`, ErrInvalid,
			`jsonschema: schema does not conform to its draft: properties.a.pattern: "([" is not a valid regex`},
		{"not JSON", `{"type":`, ErrSchemaJSON, "jsonschema: schema is not valid JSON"},
		{"empty", ``, ErrSchemaJSON, "jsonschema: schema is not valid JSON"},
		{"duplicate key", `{"properties":{"a":{"type":"string","type":"integer"}}}`, ErrDuplicateKey, "jsonschema: duplicate key: properties.a.type"},
		{"too deep", deep, ErrTooDeep, "jsonschema: schema nested too deeply: " + deepPath() + ": more than 128 levels"},
		{"too large", huge, ErrTooLarge, "jsonschema: schema too large: 1048594 bytes, the limit is 1048576"},
		{"number exponent out of range", `{"properties":{"a":{"maximum":1e1001}}}`, ErrTooLarge,
			"jsonschema: schema too large: properties.a.maximum: number out of range (more than 400 characters or an exponent past ±1000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile([]byte(tc.schema))
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err = %v, want %v", err, tc.sentinel)
			}
			if err.Error() != tc.msg {
				t.Fatalf("message\n got %s\nwant %s", err, tc.msg)
			}
		})
	}
}

func deepPath() string {
	p := "not"
	for range MaxDepth - 1 {
		p += ".not"
	}
	return p
}

func repeat(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	s := MustCompile(`{}`)
	deep := repeat('[', MaxDepth+1) + repeat(']', MaxDepth+1)
	big := `"` + repeat('x', MaxDocBytes) + `"`
	runs := []struct {
		name, doc string
		want      []string
	}{
		{"deepest allowed", repeat('[', MaxDepth) + repeat(']', MaxDepth), nil},
		{"too deep", deep, []string{deepIndexPath() + ": nested more than 128 levels [limit]"}},
		{"too large", big, []string{"document is 4194306 bytes, more than the limit of 4194304 [limit]"}},
		{"not JSON", `{"a":`, []string{"document is not valid JSON [json]"}},
		{"duplicate key", `{"a":{"b":1,"b":2}}`, []string{"a.b: property appears more than once [json]"}},
		// The validator compares numbers exactly: an exponent past its
		// range once panicked inside it (kept as a FuzzValidate input).
		{"largest exponent", `[1e1000,-2.5E-1000,3e+1000]`, nil},
		{"exponent out of range", `{"a":[1e1010000]}`, []string{"a.0: number out of range (more than 400 characters or an exponent past ±1000) [limit]"}},
		{"exponent past int", `1e99999999999999999999`, []string{"number out of range (more than 400 characters or an exponent past ±1000) [limit]"}},
		{"too many digits", "1" + repeat('0', MaxNumberChars), []string{"number out of range (more than 400 characters or an exponent past ±1000) [limit]"}},
	}
	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := render(s.ValidateString(tc.doc))
			if len(got) == 0 {
				got = nil
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func deepIndexPath() string {
	p := "0"
	for range MaxDepth - 1 {
		p += ".0"
	}
	return p
}

// TestDraftsRecognised: every $schema spelling MCP servers emit selects a
// built-in metaschema; none is fetched.
func TestDraftsRecognised(t *testing.T) {
	t.Parallel()
	for _, d := range []string{
		"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/schema#",
	} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]byte(`{"$schema":"` + d + `","type":"object","required":["a"]}`))
			if err != nil {
				t.Fatal(err)
			}
			if got := render(s.Validate([]byte(`{}`))); len(got) != 1 || got[0] != "a: required property is missing [required]" {
				t.Fatalf("got %q", got)
			}
		})
	}
}
