package argcheck_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/argcheck"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

const (
	contract = `{"args":{"title":{"sources":["USER"]},"spaceId":{"from":"shared.spaceId"}}}`
	schema   = `{"type":"object","additionalProperties":false,"required":["title","spaceId","body"],` +
		`"properties":{"title":{"type":"string","maxLength":20},"spaceId":{"type":"integer"},"body":{"type":"string"},` +
		`"tags":{"type":"array","items":{"type":"string"}}}}`
	next   = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	nextEN = "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
)

var cases = []struct {
	name, args, schema string
	locale             abi.Locale
	want               string // "" = pass
}{
	{"complete", `{"title":"Q3 report","body":"text"}`, schema, "", ""},
	{"spaceId is bound, so not required", `{"title":"Q3","body":"b"}`, schema, "", ""},
	{"no schema", `{"anything":1}`, "", "", ""},
	{"missing body", `{"title":"Q3 report"}`, schema, "", "参数不符合工具 create_article 的定义：body: required property is missing。下一步：" + next},
	{"several fields", `{"title":"a title that is far too long","body":3,"owner":"x"}`, schema, "",
		"参数不符合工具 create_article 的定义：title: \"a title that is far too long\" is longer than the maximum length 20；body: expected string, got number；owner: property is not allowed (additionalProperties is false)。下一步：" + next},
	{"not an object en", `[1,2]`, schema, abi.LocaleEN, "arguments do not match tool create_article: expected object, got array. Next: " + nextEN},
	{"broken schema", `{}`, `{"type":"object","properties":{"a":{"type":"bogus"}}}`, "",
		"参数不符合工具 create_article 的定义：guest: schema at \"schema\": invalid JSON Schema: jsonschema: schema does not conform to its draft: properties.a.type: \"bogus\" is not one of [\"array\",\"boolean\",\"integer\",\"null\",\"number\",\"object\",\"string\"]。下一步：调用 builtin_node_fail 说明原因"},
}

func request(args, schema string, l abi.Locale) []byte {
	b, _ := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_article",
		Args: json.RawMessage(args), Contract: json.RawMessage(contract), Schema: json.RawMessage(schema), Locale: l})
	return b
}

func message(v abi.Verdict, l abi.Locale) string {
	if v.Pass {
		return ""
	}
	o := *v.Observation
	o.Locale = l
	return o.Message()
}

// TestNativeAndWasmAgree runs every case in-process and through the wasm
// build, and requires the exact same verdict from both.
func TestNativeAndWasmAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: plugintest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.Load(ctx, host.Source{Name: "argcheck.wasm", Bytes: plugintest.Module(t, "./cmd")}, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			n, err := guest.NewNative(argcheck.Plugin, 0)
			if err != nil {
				t.Fatal(err)
			}
			req := request(tt.args, tt.schema, tt.locale)
			nv, err := n.Call(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wv, err := p.Invoke(ctx, "t", req)
			if err != nil {
				t.Fatal(err)
			}
			if got := message(nv, tt.locale); got != tt.want {
				t.Fatalf("native:\n got %q\nwant %q", got, tt.want)
			}
			nj, _ := json.Marshal(nv)
			wj, _ := json.Marshal(wv)
			if string(nj) != string(wj) {
				t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
			}
		})
	}
}
