package openai

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
)

func TestStrictTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		schema  string
		want    string
		wantErr string
	}{
		{
			name:   "already strict: unchanged, order kept",
			schema: `{"type":"object","properties":{"space":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["space","limit"],"additionalProperties":false}`,
			want:   `{"type":"object","properties":{"space":{"type":"string"},"limit":{"type":["integer","null"]}},"required":["space","limit"],"additionalProperties":false}`,
		},
		{
			name:   "no schema: the closed empty object",
			schema: ``,
			want:   `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		},
		{
			name:   "optional scalars become nullable, property order kept, enum gains null",
			schema: `{"type":"object","properties":{"z":{"type":"string","description":"first"},"a":{"type":"integer","minimum":1},"mode":{"type":"string","enum":["fast","slow"]}},"required":["z"]}`,
			want:   `{"type":"object","properties":{"z":{"type":"string","description":"first"},"a":{"type":["integer","null"],"minimum":1},"mode":{"type":["string","null"],"enum":["fast","slow",null]}},"required":["z","a","mode"],"additionalProperties":false}`,
		},
		{
			name:   "nested objects and array items closed recursively",
			schema: `{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object","properties":{"goodsCode":{"type":"string"},"qty":{"type":"number"}},"required":["goodsCode"]}}},"required":["lines"]}`,
			want:   `{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object","properties":{"goodsCode":{"type":"string"},"qty":{"type":["number","null"]}},"required":["goodsCode","qty"],"additionalProperties":false}}},"required":["lines"],"additionalProperties":false}`,
		},
		{
			name:   "optional object, union type, anyOf, $ref and const",
			schema: `{"type":"object","properties":{"addr":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"n":{"type":["integer","string"]},"x":{"anyOf":[{"type":"string"},{"type":"integer"}]},"r":{"$ref":"#/$defs/id"},"k":{"const":"v"}},"$defs":{"id":{"type":"string"}}}`,
			want:   `{"type":"object","properties":{"addr":{"type":["object","null"],"properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"n":{"type":["integer","string","null"]},"x":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]},"r":{"anyOf":[{"$ref":"#/$defs/id"},{"type":"null"}]},"k":{"anyOf":[{"const":"v"},{"type":"null"}]}},"$defs":{"id":{"type":"string"}},"additionalProperties":false,"required":["addr","n","x","r","k"]}`,
		},
		{
			name:   "optional but already nullable: left as it is",
			schema: `{"type":"object","properties":{"note":{"type":["string","null"]}},"additionalProperties":false}`,
			want:   `{"type":"object","properties":{"note":{"type":["string","null"]}},"additionalProperties":false,"required":["note"]}`,
		},
		{
			name:   "optional $ref to a nullable definition: left as it is",
			schema: `{"type":"object","properties":{"note":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":["string","null"]}}}`,
			want:   `{"type":"object","properties":{"note":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":["string","null"]}},"additionalProperties":false,"required":["note"]}`,
		},
		{name: "not JSON", schema: `{"type":`, wantErr: "parameter schema is not JSON: unexpected EOF"},
		{name: "root not an object", schema: `{"type":"array","items":{"type":"string"}}`, wantErr: "$: the root must be an object schema"},
		{name: "root anyOf", schema: `{"type":"object","anyOf":[]}`, wantErr: "$: anyOf is not allowed at the root"},
		{name: "open additionalProperties", schema: `{"type":"object","properties":{},"additionalProperties":true}`, wantErr: "$: additionalProperties must be false (it admits undeclared properties)"},
		{name: "additionalProperties schema", schema: `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`, wantErr: "$.properties.m: additionalProperties must be false (it admits undeclared properties)"},
		{name: "unsupported keyword deep", schema: `{"type":"object","properties":{"a":{"type":"array","items":{"allOf":[{"type":"string"}]}}}}`, wantErr: `$.properties.a.items: "allOf" is not supported in strict mode`},
		{name: "untyped property", schema: `{"type":"object","properties":{"a":{"description":"anything"}}}`, wantErr: "$.properties.a: strict mode needs a type"},
		{name: "boolean subschema", schema: `{"type":"object","properties":{"a":true}}`, wantErr: "$.properties.a: a schema must be an object"},
		{name: "remote $ref", schema: `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, wantErr: `$.properties.a: $ref "https://example.com/a.json" is not a local definition`},
		{name: "$ref to nothing", schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, wantErr: `$.properties.a: $ref "#/$defs/missing" names no definition`},
		{
			name:    "optional properties in one of two object alternatives",
			schema:  `{"type":"object","properties":{"t":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}},"required":["t"]}`,
			wantErr: "$.properties.t: optional properties in one of several object alternatives cannot be mapped back",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _, err := strictTool(json.RawMessage(tt.schema))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("strictTool error = %q, want %q", gotErr, tt.wantErr)
			}
			if err != nil {
				return
			}
			if string(got) != tt.want {
				t.Errorf("strictTool:\n got %s\nwant %s", got, tt.want)
			}
			// Every conversion passes the provider's rules.
			if err := CheckStrictSchema(got); err != nil {
				t.Errorf("CheckStrictSchema(converted) = %v", err)
			}
		})
	}
}

func TestStrictRestore(t *testing.T) {
	t.Parallel()
	const order = `{"type":"object","properties":{"id":{"type":"string"},"note":{"type":"string"},"keep":{"type":["string","null"]},` +
		`"lines":{"type":"array","items":{"type":"object","properties":{"code":{"type":"string"},"qty":{"type":"integer"}},"required":["code"]}},` +
		`"ship":{"$ref":"#/$defs/addr"},"alt":{"anyOf":[{"type":"null"},{"type":"object","properties":{"w":{"type":"string"}}}]}},` +
		`"required":["id","lines"],"$defs":{"addr":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}}}`
	const tree = `{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}},"required":["name"]}`
	tests := []struct {
		name, schema, args, want string
	}{
		{name: "null of an optional property dropped, order kept", schema: order,
			args: `{"id":"o1","note":null,"keep":null,"lines":[]}`, want: `{"id":"o1","keep":null,"lines":[]}`},
		{name: "nothing to drop: text unchanged byte for byte", schema: order,
			args: `{ "id": "o1", "note": "\u00e9", "lines": [] }`, want: `{ "id": "o1", "note": "\u00e9", "lines": [] }`},
		{name: "in array items", schema: order,
			args: `{"id":"o1","note":"x","lines":[{"code":"a","qty":null},{"code":"b","qty":2}]}`, want: `{"id":"o1","note":"x","lines":[{"code":"a"},{"code":"b","qty":2}]}`},
		{name: "through a $ref; a null the original admits is kept", schema: order,
			args: `{"id":"o1","lines":[],"ship":{"city":"Oslo","zip":null},"alt":null}`, want: `{"id":"o1","lines":[],"ship":{"city":"Oslo"},"alt":null}`},
		{name: "the optional object itself", schema: order,
			args: `{"id":"o1","lines":[],"ship":null}`, want: `{"id":"o1","lines":[]}`},
		{name: "through the only object alternative of anyOf", schema: order,
			args: `{"id":"o1","lines":[],"alt":{"w":null}}`, want: `{"id":"o1","lines":[],"alt":{}}`},
		{name: "required property's null kept", schema: order,
			args: `{"id":null,"lines":null}`, want: `{"id":null,"lines":null}`},
		{name: "invalid JSON left to the guards", schema: order, args: `{"id":"o1","note":null`, want: `{"id":"o1","note":null`},
		{name: "not an object", schema: order, args: `[null]`, want: `[null]`},
		{name: "numbers and non-ASCII kept when rewritten", schema: order,
			args: `{"id":"中文<&>","note":null,"lines":[{"code":"1","qty":10000000000000000000001}]}`, want: `{"id":"中文<&>","lines":[{"code":"1","qty":10000000000000000000001}]}`},
		{name: "recursive through the root", schema: tree,
			args: `{"name":"a","child":{"name":"b","child":{"name":"c","child":null}}}`, want: `{"name":"a","child":{"name":"b","child":{"name":"c"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, r, err := strictTool(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if r == nil {
				t.Fatal("no restorer for a schema with optional properties")
			}
			if got := r.restore(tt.args); got != tt.want {
				t.Errorf("restore(%s)\n got %s\nwant %s", tt.args, got, tt.want)
			}
		})
	}
	if _, r, err := strictTool(json.RawMessage(strictSchema)); err != nil || r != nil {
		t.Errorf("strictTool(strict schema) restorer = %v, %v; want none", r, err)
	}
}

// TestStrictRestoreRefs: references are followed to see whether a property
// admits null, and a schema whose definitions refer to themselves along
// several paths is restored in bounded work.
func TestStrictRestoreRefs(t *testing.T) {
	t.Parallel()
	const selfRef = `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],` +
		`"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}},"$ref":"#/$defs/A","anyOf":[{"$ref":"#/$defs/A"}]}}}`
	const nullableRef = `{"type":"object","properties":{"note":{"$ref":"#/$defs/N"},"id":{"type":"string"}},"$defs":{"N":{"type":["string","null"]}}}`
	const chain = `{"type":"object","properties":{"note":{"$ref":"#/$defs/M"}},"$defs":{"M":{"$ref":"#/$defs/N"},"N":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`
	const loop = `{"type":"object","properties":{"a":{"$ref":"#/$defs/L"}},"$defs":{"L":{"$ref":"#/$defs/L"}}}`
	const lines = `{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object","properties":{"q":{"type":"integer"}}}}},"required":["lines"]}`
	tests := []struct {
		name, schema, args, want string
		maxSteps                 int
	}{
		{name: "$ref next to anyOf of the same $ref", schema: selfRef,
			args: `{"a":{"x":null}}`, want: `{"a":{}}`},
		{name: "$ref next to anyOf of the same $ref, deep", schema: selfRef,
			args: `{"a":{"x":null,"y":{"x":null}}}`, want: `{"a":{"y":{"x":null}}}`},
		{name: "null admitted through a $ref is kept", schema: nullableRef,
			args: `{"note":null,"id":null}`, want: `{"note":null}`},
		{name: "null admitted through a chain of $refs and anyOf is kept", schema: chain,
			args: `{"note":null}`, want: `{"note":null}`},
		{name: "a definition that is only a $ref to itself admits no null", schema: loop,
			args: `{"a":null}`, want: `{}`},
		{name: "within the step bound", schema: lines, maxSteps: 5,
			args: `{"lines":[{"q":null},{"q":1},{"q":null}]}`, want: `{"lines":[{},{"q":1},{}]}`},
		{name: "past the step bound: unchanged", schema: lines, maxSteps: 4,
			args: `{"lines":[{"q":null},{"q":1},{"q":null}]}`, want: `{"lines":[{"q":null},{"q":1},{"q":null}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, r, err := strictTool(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				r.maxSteps = tt.maxSteps
			}
			done := make(chan string, 1)
			go func() { done <- r.restore(tt.args) }()
			select {
			case got := <-done:
				if got != tt.want {
					t.Errorf("restore(%s)\n got %s\nwant %s", tt.args, got, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("restore(%s) did not return within 10s", tt.args)
			}
		})
	}
}

// Complete returns, the arguments mapped back, for a tool whose schema has
// a definition with $ref next to anyOf:[{$ref}] (as MCP servers send).
func TestStrictSelfReferenceComplete(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],` +
		`"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}},"$ref":"#/$defs/A","anyOf":[{"$ref":"#/$defs/A"}]}}}`
	srv := fakeprovider.New(t, fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c1", Name: "t", Arguments: `{"a":{"x":null}}`}}})
	cfg := testConfig(srv.URL)
	cfg.Strict = true
	req := model.Request{Messages: userOnly.Messages, Tools: []model.Tool{{Name: "t", Parameters: json.RawMessage(schema)}}}
	type result struct {
		resp model.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := newTestClient(t, cfg).Complete(context.Background(), req)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := r.resp.Message.ToolCalls; len(got) != 1 || got[0].Arguments != `{"a":{}}` {
			t.Fatalf("tool calls = %+v, want one with arguments {\"a\":{}}", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return within 10s")
	}
}
