//go:build !wasip1

package argpolicy_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/argpolicy"
)

var pair = testdata.NewPair(argpolicy.Plugin, "./plugins/guards/argpolicy/cmd", time.Time{})

const (
	contract = `{"args":{"title":{"sources":["USER"]},"spaceId":{"from":"shared.spaceId"},"currency":{"const":"CNY"},` +
		`"lines[].goodsCode":{"from":"shared.cart[].code"}}}`
	schema = `{"type":"object","additionalProperties":false,"required":["title","spaceId","currency","lines"],"properties":{` +
		`"title":{"type":"string","maxLength":20},"spaceId":{"type":"integer"},"currency":{"type":"string","enum":["CNY","USD"]},` +
		`"qty":{"type":"integer","minimum":1,"maximum":99},"code":{"type":"string","pattern":"^[A-Z]{3}$"},` +
		`"due":{"type":"string","format":"date-time"},"email":{"type":"string","format":"email"},"orderId":{"type":"string","format":"uuid"},` +
		`"lines":{"type":"array","items":{"type":"object","required":["goodsCode","qty"],"properties":{"goodsCode":{"type":"string"},"qty":{"type":"integer"}}}}}}`
	next   = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	nextEN = "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
	reason = "参数不符合工具 create_order 的定义："

	// Schemas as MCP servers publish them: pydantic/FastMCP ($defs, $ref,
	// anyOf with null, formats), draft-07 definitions, a recursive tree.
	pydantic = `{"$defs":{"Address":{"properties":{"city":{"title":"City","type":"string"},` +
		`"zip":{"anyOf":[{"type":"string","pattern":"^[0-9]{5}$"},{"type":"null"}],"default":null}},"required":["city"],"type":"object"},` +
		`"Priority":{"enum":["low","high"],"type":"string"}},"properties":{"title":{"type":"string"},"address":{"$ref":"#/$defs/Address"},` +
		`"backup":{"anyOf":[{"$ref":"#/$defs/Address"},{"type":"null"}],"default":null},"priority":{"$ref":"#/$defs/Priority"},` +
		`"host":{"type":"string","format":"hostname"},"contact":{"type":"string","format":"email"},"hook":{"type":"string","format":"uri"},` +
		`"ip":{"type":"string","format":"ipv4"},"at":{"type":"string","format":"date-time"},"ref":{"type":"string","format":"uuid"},` +
		`"phone":{"type":"string","format":"x-phone"}},"required":["title","address"],"title":"create_orderArguments","type":"object"}`
	draft7 = `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"Line":{"type":"object","required":["goodsCode","qty"],` +
		`"properties":{"goodsCode":{"type":"string"},"qty":{"type":"integer","minimum":1}}}},"type":"object","required":["lines"],` +
		`"properties":{"lines":{"type":"array","items":{"$ref":"#/definitions/Line"}}}}`
	tree = `{"$defs":{"node":{"type":"object","required":["title"],"properties":{"title":{"type":"string"},` +
		`"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`
	remote = `{"type":"object","properties":{"title":{"$ref":"https://schemas.example.com/title.json"}}}`
)

type tcase struct {
	name     string
	args     string // raw JSON; "" = absent
	argsText string
	schema   string
	locale   abi.Locale
	code     abi.Code // "" = pass
	message  string
}

var cases = []tcase{
	{name: "valid", args: `{"title":"Q3","lines":[{"qty":1}]}`, schema: schema},
	{name: "valid with every format", args: `{"title":"Q3","lines":[],"qty":5,"code":"ABC","due":"2024-05-01T08:00:00+08:00",` +
		`"email":"a.b@example.com","orderId":"123e4567-e89b-12d3-a456-426614174000"}`, schema: schema},
	{name: "no schema: any object", args: `{"anything":1}`},
	{name: "no schema and no arguments", args: ""},
	{name: "not JSON", argsText: `{"title": "Q3",}`, schema: schema, code: abi.ArgJSONInvalid,
		message: "参数不是合法 JSON：第 1 行第 16 列：invalid character '}' looking for beginning of object key string；该处参数原文：{\"title\": \"Q3\",}。下一步：" + next},
	{name: "not JSON, second line, en", argsText: "{\"title\":\n \"Q3\" \"x\"}", locale: abi.LocaleEN, code: abi.ArgJSONInvalid,
		message: "arguments are not valid JSON: line 2, column 7: invalid character '\"' after object key:value pair; the arguments there read: {\"title\":\\n \"Q3\" \"x\"}. Next: " + nextEN},
	{name: "truncated JSON", argsText: `{"title":"Q3"`, code: abi.ArgJSONInvalid,
		message: "参数不是合法 JSON：第 1 行第 14 列：unexpected end of JSON input；该处参数原文：{\"title\":\"Q3\"。下一步：" + next},
	{name: "array", args: `[1,2]`, schema: schema, code: abi.ArgRejected, message: reason + "应为 JSON 对象，实际为数组。下一步：" + next},
	{name: "string without schema", args: `"title=Q3"`, code: abi.ArgRejected, message: reason + "应为 JSON 对象，实际为字符串。下一步：" + next},
	{name: "null en", args: `null`, locale: abi.LocaleEN, code: abi.ArgRejected,
		message: "arguments do not match tool create_order: expected a JSON object, got null. Next: " + nextEN},
	{name: "required", args: `{"spaceId":1,"currency":"CNY","lines":[]}`, schema: schema, code: abi.ArgRejected,
		message: reason + "title: required property is missing。下一步：" + next},
	{name: "from and const parameters are not required", args: `{"title":"Q3","lines":[]}`, schema: schema},
	{name: "array template parameter is not required", args: `{"title":"Q3","lines":[{"qty":1},{"qty":2}]}`, schema: schema},
	{name: "unbound item field is required", args: `{"title":"Q3","lines":[{"goodsCode":"G1"}]}`, schema: schema, code: abi.ArgRejected,
		message: reason + "lines.0.qty: required property is missing。下一步：" + next},
	{name: "no arguments, schema requires some", args: "", schema: schema, code: abi.ArgRejected,
		message: reason + "title: required property is missing；lines: required property is missing。下一步：" + next},
	{name: "type", args: `{"title":7,"lines":[]}`, schema: schema, code: abi.ArgRejected,
		message: reason + "title: expected string, got number。下一步：" + next},
	{name: "additionalProperties", args: `{"title":"Q3","lines":[],"owner":"me"}`, schema: schema, code: abi.ArgRejected,
		message: reason + "owner: property is not allowed (additionalProperties is false)。下一步：" + next},
	{name: "enum", args: `{"title":"Q3","lines":[],"currency":"GBP"}`, schema: schema, code: abi.ArgRejected,
		message: reason + `currency: "GBP" is not one of ["CNY","USD"]。下一步：` + next},
	{name: "minimum", args: `{"title":"Q3","lines":[],"qty":0}`, schema: schema, code: abi.ArgRejected,
		message: reason + "qty: 0 is less than the minimum 1。下一步：" + next},
	{name: "maximum", args: `{"title":"Q3","lines":[],"qty":100}`, schema: schema, code: abi.ArgRejected,
		message: reason + "qty: 100 is greater than the maximum 99。下一步：" + next},
	{name: "pattern", args: `{"title":"Q3","lines":[],"code":"abc"}`, schema: schema, code: abi.ArgRejected,
		message: reason + `code: "abc" does not match the pattern "^[A-Z]{3}$"。下一步：` + next},
	{name: "format date-time", args: `{"title":"Q3","lines":[],"due":"2024-05-01 08:00"}`, schema: schema, code: abi.ArgRejected,
		message: reason + `due: "2024-05-01 08:00" is not a valid date-time。下一步：` + next},
	{name: "format email", args: `{"title":"Q3","lines":[],"email":"a@"}`, schema: schema, code: abi.ArgRejected,
		message: reason + `email: "a@" is not a valid email。下一步：` + next},
	{name: "format uuid", args: `{"title":"Q3","lines":[],"orderId":"42"}`, schema: schema, code: abi.ArgRejected,
		message: reason + `orderId: "42" is not a valid uuid。下一步：` + next},
	{name: "every failing field is named, en", args: `{"title":"a title that is far too long","lines":[{"qty":"2"}],"qty":0,"owner":"x"}`,
		schema: schema, locale: abi.LocaleEN, code: abi.ArgRejected,
		message: `arguments do not match tool create_order: title: "a title that is far too long" is longer than the maximum length 20; ` +
			`qty: 0 is less than the minimum 1; lines.0.qty: expected integer, got string; owner: property is not allowed (additionalProperties is false). Next: ` + nextEN},
	{name: "pydantic valid", args: `{"title":"Q3","address":{"city":"Oslo","zip":null},"backup":null,"priority":"high",` +
		`"host":"db-1.example.com","contact":"a@example.com","hook":"https://example.com/h","ip":"10.0.0.1",` +
		`"at":"2024-05-01T08:00:00Z","ref":"123e4567-e89b-12d3-a456-426614174000","phone":"unchecked"}`, schema: pydantic},
	{name: "pydantic invalid", args: `{"title":"Q3","address":{"zip":"123"},"backup":{"city":5},"priority":"urgent"}`, schema: pydantic,
		code: abi.ArgRejected, message: reason + `address.city: required property is missing；address.zip: "123" does not match the pattern "^[0-9]{5}$"；` +
			`backup.city: expected string, got number；priority: "urgent" is not one of ["low","high"]。下一步：` + next},
	{name: "pydantic optional of the wrong type, en", args: `{"title":"Q3","address":{"city":"Oslo"},"backup":"Rome"}`, schema: pydantic,
		locale: abi.LocaleEN, code: abi.ArgRejected,
		message: "arguments do not match tool create_order: backup: expected object or null, got string. Next: " + nextEN},
	{name: "formats", args: `{"title":"Q3","address":{"city":"Oslo"},"host":"-x-","contact":"a@","hook":"/rel","ip":"1.2.3","at":"2024-05-01","ref":"42"}`,
		schema: pydantic, code: abi.ArgRejected,
		message: reason + `host: "-x-" is not a valid hostname；contact: "a@" is not a valid email；hook: "/rel" is not a valid uri；` +
			`ip: "1.2.3" is not a valid ipv4；at: "2024-05-01" is not a valid date-time；ref: "42" is not a valid uuid。下一步：` + next},
	{name: "draft-07 definitions valid", args: `{"lines":[{"goodsCode":"G1","qty":1}]}`, schema: draft7},
	{name: "draft-07 definitions, bound item field exempt", args: `{"lines":[{"qty":0},{"qty":2}]}`, schema: draft7, code: abi.ArgRejected,
		message: reason + "lines.0.qty: 0 is less than the minimum 1。下一步：" + next},
	{name: "recursive valid", args: `{"title":"root","children":[{"title":"a","children":[{"title":"b"}]}]}`, schema: tree},
	{name: "recursive invalid", args: `{"title":"root","children":[{"title":"a","children":[{"children":[]}]},{"title":3}]}`, schema: tree,
		code: abi.ArgRejected, message: reason + "children.0.children.0.title: required property is missing；children.1.title: expected string, got number。下一步：" + next},
	{name: "remote $ref refused", args: `{"title":"Q3"}`, schema: remote, code: abi.ArgRejected,
		message: reason + `guest: schema at "schema": invalid JSON Schema: jsonschema: remote reference refused: "https://schemas.example.com/title.json" is outside the schema; ` +
			`only references into the schema itself (such as #/$defs/Name) are resolved, nothing is fetched。下一步：调用 builtin_node_fail 说明原因`},
	{name: "broken schema", args: `{}`, schema: `{"type":"object","properties":{"a":{"type":"bogus"}}}`, code: abi.ArgRejected,
		message: reason + `guest: schema at "schema": invalid JSON Schema: jsonschema: schema does not conform to its draft: properties.a.type: "bogus" is not one of ["array","boolean","integer","null","number","object","string"]。下一步：调用 builtin_node_fail 说明原因`},
}

func request(tc tcase) []byte {
	r := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_order", CallID: "c1",
		ArgsText: tc.argsText, Contract: json.RawMessage(contract), Locale: tc.locale}
	if tc.args != "" {
		r.Args = json.RawMessage(tc.args)
	}
	if tc.schema != "" {
		r.Schema = json.RawMessage(tc.schema)
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

// TestArgPolicy runs every case natively and as wasm, requires
// byte-identical verdicts, and checks outcome, code and exact message.
func TestArgPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := request(tc)
			nv := pair.Both(t, req)
			nj, _ := json.Marshal(nv)
			if tc.code == "" {
				if !nv.Pass || nv.Args != nil || nv.Facts != nil {
					t.Fatalf("want a plain pass, got %s", nj)
				}
				return
			}
			if nv.Pass || nv.Observation == nil {
				t.Fatalf("want %s, got %s", tc.code, nj)
			}
			o := *nv.Observation
			o.Locale = tc.locale
			if o.Outcome != abi.OutcomeRejected || o.Code != tc.code {
				t.Fatalf("got %v %s, want REJECTED %s", o.Outcome, o.Code, tc.code)
			}
			if got := o.Message(); got != tc.message {
				t.Fatalf("message\n got %q\nwant %q", got, tc.message)
			}
		})
	}
}
