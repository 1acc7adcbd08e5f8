package domainguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/domainguard"
)

// acme is the config of the tenant the cases run as.
const acme = `{"tool":"create_website","allowed":["example.com","acme.cn"]}`

const fixArgs = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"

func TestDomainGuard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, args, bound, config string
		locale                          abi.Locale
		want                            string // "" = pass
	}{
		{"an allowed domain", "create_website", `{"domain":"example.com"}`, "", acme, "", ""},
		{"a subdomain", "create_website", `{"name":"Spring","domain":"spring.example.com"}`, "", acme, "", ""},
		{"upper case and a trailing dot", "create_website", `{"domain":"Shop.ACME.cn."}`, "", acme, "", ""},
		{"other tool", "query_space", `{"domain":"evil.org"}`, "", acme, "", ""},
		{"a foreign domain", "create_website", `{"domain":"evil.org"}`, "", acme, "",
			"域名 evil.org 不属于本租户的域名（acme.cn、example.com 及其子域名）。下一步：调用 builtin_node_follow_up 请用户改用 acme.cn、example.com 下的域名；不要自行更换域名"},
		{"a foreign domain en", "create_website", `{"domain":"evil.org"}`, "", acme, abi.LocaleEN,
			"domain evil.org is not one of this tenant's domains (acme.cn, example.com and their subdomains). Next: ask the user with builtin_node_follow_up for a domain under acme.cn, example.com; do not choose another domain yourself"},
		{"a look-alike suffix", "create_website", `{"domain":"evilexample.com"}`, "", acme, abi.LocaleEN,
			"domain evilexample.com is not one of this tenant's domains (acme.cn, example.com and their subdomains). Next: ask the user with builtin_node_follow_up for a domain under acme.cn, example.com; do not choose another domain yourself"},
		{"the allowed domain as a prefix", "create_website", `{"domain":"example.com.evil.org"}`, "", `{"tool":"create_website","allowed":["example.com"]}`, abi.LocaleEN,
			"domain example.com.evil.org is not one of this tenant's domains (example.com and their subdomains). Next: ask the user with builtin_node_follow_up for a domain under example.com; do not choose another domain yourself"},
		{"bound arguments decide", "create_website", `{"domain":"spring.example.com"}`, `{"domain":"evil.org"}`, `{"tool":"create_website","allowed":["example.com"]}`, abi.LocaleEN,
			"domain evil.org is not one of this tenant's domains (example.com and their subdomains). Next: ask the user with builtin_node_follow_up for a domain under example.com; do not choose another domain yourself"},
		{"a configured field", "create_website", `{"site":{"host":"a.example.com"}}`, "", `{"tool":"create_website","field":"site.host","allowed":["example.com"]}`, "", ""},
		{"domain missing", "create_website", `{"name":"Spring"}`, "", acme, "",
			"域名 [domain] 缺失或不是字符串。下一步：" + fixArgs},
		{"domain not a string", "create_website", `{"domain":42}`, "", acme, "",
			"域名 [domain] 缺失或不是字符串。下一步：" + fixArgs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := guest.NewNative(domainguard.Plugin, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: tc.tool,
				Args: json.RawMessage(tc.args), Config: json.RawMessage(tc.config), Locale: tc.locale}
			if tc.bound != "" {
				req.Bound = json.RawMessage(tc.bound)
			}
			b, err := json.Marshal(&req)
			if err != nil {
				t.Fatal(err)
			}
			v, err := n.Call(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && !v.Pass:
				t.Fatalf("want pass, got %+v", v.Observation)
			case tc.want == "":
			case v.Pass || v.Observation == nil:
				t.Fatalf("want %q, got a pass", tc.want)
			case v.Observation.Outcome != abi.OutcomeRejected || v.Observation.Code != abi.ArgRejected:
				t.Fatalf("got %s %s, want REJECTED ARG_REJECTED", v.Observation.Outcome, v.Observation.Code)
			default:
				v.Observation.Locale = tc.locale
				if got := v.Observation.Message(); got != tc.want {
					t.Fatalf("\n got %q\nwant %q", got, tc.want)
				}
			}
		})
	}
}
