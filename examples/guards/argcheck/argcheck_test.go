package fieldcheck_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/fieldcheck"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

const contract = `{"args":{"title":{"sources":["USER"]},"spaceId":{"from":"shared.spaceId"},"body":{},"tags":{"required":false}}}`

var cases = []struct {
	name, args, config string
	locale             abi.Locale
	want               string // "" = pass
}{
	{"complete", `{"title":"Q3 report","body":"text"}`, `{}`, "", ""},
	{"missing body", `{"title":"Q3 report"}`, `{}`, "", "参数不符合工具 create_article 的定义：缺少必填参数 [body]。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	{"empty title and missing body", `{"title":""}`, `{}`, "", "参数不符合工具 create_article 的定义：缺少必填参数 [body]；缺少必填参数 [title]。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	{"not an object", `[1,2]`, `{}`, "", "参数不符合工具 create_article 的定义：参数不是对象。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	{"not allowed", `{"title":"a","body":"b","owner":"x"}`, `{"allowed":["title","body","tags"]}`, "", "参数不符合工具 create_article 的定义：参数 [owner] 不在允许范围内。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"},
	{"too long en", `{"title":"abcdef","body":"b","tags":["ok","toolong"]}`, `{"maxLength":5}`, abi.LocaleEN, "arguments do not match tool create_article: parameter [tags.1] is longer than 5; parameter [title] is longer than 5. Next: fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
}

func request(args, config string, l abi.Locale) []byte {
	b, _ := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_article",
		Args: json.RawMessage(args), Contract: json.RawMessage(contract), Config: json.RawMessage(config), Locale: l})
	return b
}

func message(v abi.Verdict) string {
	if v.Pass {
		return ""
	}
	o := *v.Observation
	if o.Text != "" && o.Text[0] < 0x80 {
		o.Locale = abi.LocaleEN
	}
	return o.Message()
}

// TestNativeAndWasmAgree runs every case in-process and through the wasm
// build, and requires the exact same verdict from both.
func TestNativeAndWasmAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	path, err := testdata.Build("./examples/guards/fieldcheck/cmd")
	if err != nil {
		t.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Load(ctx, src, host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			n, err := guest.NewNative(fieldcheck.Plugin, 0)
			if err != nil {
				t.Fatal(err)
			}
			req := request(tt.args, tt.config, tt.locale)
			nv, err := n.Call(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wv, err := p.Invoke(ctx, "t", req)
			if err != nil {
				t.Fatal(err)
			}
			if got := message(nv); got != tt.want {
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
