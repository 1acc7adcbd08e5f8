package spendlimit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/spendlimit"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

// acme is the config of the tenant most cases run as.
const acme = `{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"USD":800,"CNY":5000}}`

const (
	fixArgs   = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	fixArgsEN = "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
)

var cases = []struct {
	name, tool, args, bound string
	locale                  abi.Locale
	want                    string // "" = pass
}{
	{"within the limit", "create_payment", `{"amount":4999.5,"currency":"CNY","payee":"p-1"}`, "", "", ""},
	{"exactly the limit", "create_payment", `{"amount":800,"currency":"USD"}`, "", "", ""},
	{"lower-case currency", "create_payment", `{"amount":10,"currency":"usd"}`, "", "", ""},
	{"other tool", "query_balance", `{"amount":"all","currency":"XXX"}`, "", "", ""},
	{"over the limit", "create_payment", `{"amount":6000,"currency":"CNY"}`, "", "",
		"付款金额 6000 CNY 超过单笔上限 5000 CNY。下一步：调用 builtin_node_follow_up 请用户把付款拆成每笔不超过 5000 CNY 的多笔，或确认一个不超过 5000 CNY 的金额；不要自行修改金额"},
	{"over the limit en", "create_payment", `{"amount":800.01,"currency":"USD"}`, "", abi.LocaleEN,
		"the payment of 800.01 USD is over the per-call limit of 800 USD. Next: ask the user with builtin_node_follow_up to split the payment into parts of at most 800 USD or to confirm an amount of at most 800 USD; do not change the amount on your own"},
	{"bound arguments decide", "create_payment", `{"amount":100,"currency":"USD"}`, `{"amount":900,"currency":"USD"}`, abi.LocaleEN,
		"the payment of 900 USD is over the per-call limit of 800 USD. Next: ask the user with builtin_node_follow_up to split the payment into parts of at most 800 USD or to confirm an amount of at most 800 USD; do not change the amount on your own"},
	{"unknown currency", "create_payment", `{"amount":10,"currency":"JPY"}`, "", "",
		"币种 JPY 不在允许付款的币种（CNY、USD）之中。下一步：调用 builtin_node_follow_up 请用户改用允许的币种付款；不要自行换算金额"},
	{"unknown currency en", "create_payment", `{"amount":10,"currency":"EUR"}`, "", abi.LocaleEN,
		"currency EUR is not among the currencies allowed for payments (CNY, USD). Next: ask the user with builtin_node_follow_up to pay in an allowed currency; do not convert the amount on your own"},
	{"amount is a string", "create_payment", `{"amount":"6000","currency":"CNY"}`, "", "",
		"付款金额 [amount] 不是数字：\"6000\"。下一步：" + fixArgs},
	{"amount is missing en", "create_payment", `{"currency":"CNY"}`, "", abi.LocaleEN,
		"the payment amount [amount] is missing. Next: " + fixArgsEN},
	{"amount is negative en", "create_payment", `{"amount":-50,"currency":"CNY"}`, "", abi.LocaleEN,
		"the payment amount [amount] must be greater than 0: -50. Next: " + fixArgsEN},
	{"currency is missing", "create_payment", `{"amount":10}`, "", "",
		"付款币种 [currency] 缺失或不是字符串。下一步：" + fixArgs},
	{"long value is clipped", "create_payment", `{"amount":"一二三四五六七八九十一二三四五六七八九十","currency":"CNY"}`, "", "",
		"付款金额 [amount] 不是数字：\"一二三四五六七八九十一二三…。下一步：" + fixArgs},
}

func request(tool, args, bound string, l abi.Locale) *abi.Request {
	r := &abi.Request{Phase: abi.PhaseBefore, Tool: tool, Args: json.RawMessage(args), Locale: l}
	if bound != "" {
		r.Bound = json.RawMessage(bound)
	}
	return r
}

func message(v abi.Verdict) string {
	if v.Pass {
		return ""
	}
	return v.Observation.Message()
}

// module builds cmd/ for wasip1 (once per test binary).
func module(t *testing.T) host.Source {
	t.Helper()
	wasm := plugintest.Module(t, "./cmd")
	return host.Source{Name: "spendlimit.wasm", Bytes: wasm, SHA256: host.Digest(wasm)}
}

func newHost(t *testing.T, log *slog.Logger) *host.Host {
	t.Helper()
	h, err := host.New(host.Options{CacheDir: plugintest.CacheDir(t), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func load(t *testing.T, h *host.Host, pol host.Policy) *host.Plugin {
	t.Helper()
	p, err := h.Load(context.Background(), module(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNativeAndWasmAgree runs every case in-process and through the wasm
// build, and requires the exact message from both and the same verdict.
func TestNativeAndWasmAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := load(t, newHost(t, nil), host.Policy{Config: json.RawMessage(acme)})
	if p.Loader() != "direct" {
		t.Fatalf("loader %q, want direct", p.Loader())
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			n, err := guest.NewNative(spendlimit.Plugin, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Natively nobody fills in the config; the host does for wasm.
			req := request(tt.tool, tt.args, tt.bound, tt.locale)
			req.ABI, req.Kind, req.Config = abi.Version, abi.RoleGuard, json.RawMessage(acme)
			b, _ := json.Marshal(req)
			nv, err := n.Call(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if nv.Observation != nil {
				nv.Observation.Locale = tt.locale
			}
			wv := p.Guard(ctx, "acme", request(tt.tool, tt.args, tt.bound, tt.locale))
			if got := message(wv); got != tt.want {
				t.Fatalf("wasm:\n got %q\nwant %q", got, tt.want)
			}
			if !wv.Pass && (wv.Observation.Outcome != abi.OutcomeRejected || wv.Observation.Code != abi.ArgRejected) {
				t.Fatalf("wasm: %v %s, want REJECTED ARG_REJECTED", wv.Observation.Outcome, wv.Observation.Code)
			}
			nj, _ := json.Marshal(nv)
			wj, _ := json.Marshal(wv)
			if !bytes.Equal(nj, wj) {
				t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
			}
		})
	}
}

// TestConfigCheckedAtLoad: a tenant's config that does not match the
// manifest's configSchema never reaches a call.
func TestConfigCheckedAtLoad(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	for _, tt := range []struct{ name, config, want string }{
		{"limit is a string", `{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"CNY":"5000"}}`,
			"limits.CNY: expected number, got string"},
		{"zero limit", `{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"CNY":0}}`,
			"limits.CNY: 0 is not greater than the exclusive minimum 0"},
		{"no tool, misspelt key", `{"amountPath":"amount","currencyPath":"currency","limits":{},"perTenantDaly":1}`,
			"perTenantDaly: property is not allowed"},
		{"no config at all", ``, "amountPath: required property is missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Load(context.Background(), module(t), host.Policy{Config: json.RawMessage(tt.config)})
			if !errors.Is(err, host.ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestFailurePolicy shows what the skill contract's guards[].failure does.
// The guard is made to fail without touching its code: the policy caps its
// input at fewer bytes than one envelope, so every call fails with
// PLUGIN_INPUT_TOO_LARGE before the guest runs.
func TestFailurePolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	var mu sync.Mutex
	h := newHost(t, slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil)))
	over := `{"amount":6000,"currency":"CNY"}`
	broken := host.Policy{Config: json.RawMessage(acme), Limits: abi.Limits{MaxInputBytes: 64}}

	t.Run("closed: a failing guard rejects the call", func(t *testing.T) {
		p := load(t, h, broken)
		v := p.Guard(ctx, "acme", request("create_payment", `{"amount":1,"currency":"CNY"}`, "", abi.LocaleEN))
		want := "the call is larger than the 64-byte limit of plugin spendlimit@1.0.0. Next: call again with smaller arguments or a narrower request"
		if v.Pass || v.Observation.Outcome != abi.OutcomeRejected || v.Observation.Code != abi.PluginInputTooLarge || v.Observation.Message() != want {
			t.Fatalf("got %+v, want REJECTED PLUGIN_INPUT_TOO_LARGE %q", v, want)
		}
	})
	t.Run("open: a failing guard lets the call through", func(t *testing.T) {
		b := broken
		b.Failure = host.FailOpen
		p := load(t, h, b)
		if v := p.Guard(ctx, "acme", request("create_payment", over, "", "")); !v.Pass {
			t.Fatalf("got %s, want pass", message(v))
		}
		if s := p.Stats(); s.FailOpen != 1 {
			t.Fatalf("FailOpen = %d, want 1", s.FailOpen)
		}
	})
	t.Run("open: a working guard still rejects", func(t *testing.T) {
		p := load(t, h, host.Policy{Config: json.RawMessage(acme), Failure: host.FailOpen})
		if v := p.Guard(ctx, "acme", request("create_payment", over, "", "")); v.Pass {
			t.Fatal("fail-open passed a payment over the limit; open applies only when the guard itself fails")
		}
	})
	t.Run("shadow: the verdict is logged, the call passes", func(t *testing.T) {
		p := load(t, h, host.Policy{Config: json.RawMessage(acme), Failure: host.Shadow})
		if v := p.Guard(ctx, "acme", request("create_payment", over, "", "")); !v.Pass {
			t.Fatalf("got %s, want pass", message(v))
		}
		if s := p.Stats(); s.ShadowDiffers != 1 || s.Rejected != 1 {
			t.Fatalf("ShadowDiffers = %d, Rejected = %d, want 1 and 1", s.ShadowDiffers, s.Rejected)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := `msg="shadow guard verdict" plugin=spendlimit@1.0.0 tool=create_payment phase=before verdict="REJECTED ARG_REJECTED"`; !strings.Contains(logs.String(), want) {
			t.Fatalf("log:\n%s\nwant a line with %s", logs.String(), want)
		}
	})
}

// TestTenants attaches the same module to two tenants with different
// configs, as two skills' guards entries would. Each tenant's calls go to its
// own Plugin (its config, validated at load) and within it to the pool keyed
// by the tenant, so one tenant's instance never holds another's request.
// The module is compiled once: both loads share the host's compilation cache.
func TestTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, nil)
	guards := map[string]*host.Plugin{
		"acme": load(t, h, host.Policy{Config: json.RawMessage(acme)}),
		"globex": load(t, h, host.Policy{Config: json.RawMessage(
			`{"tool":"pay_invoice","amountPath":"payment.total","currencyPath":"payment.currency","limits":{"CNY":1000}}`)}),
	}
	if a, g := guards["acme"].Digest(), guards["globex"].Digest(); a != g {
		t.Fatalf("digests differ: %s %s", a, g)
	}
	for _, tt := range []struct{ tenant, tool, args, want string }{
		{"acme", "create_payment", `{"amount":3000,"currency":"CNY"}`, ""},
		{"globex", "create_payment", `{"amount":3000,"currency":"CNY"}`, ""}, // not globex's payment tool
		{"globex", "pay_invoice", `{"payment":{"total":3000,"currency":"CNY"}}`,
			"the payment of 3000 CNY is over the per-call limit of 1000 CNY. Next: ask the user with builtin_node_follow_up to split the payment into parts of at most 1000 CNY or to confirm an amount of at most 1000 CNY; do not change the amount on your own"},
		{"acme", "create_payment", `{"amount":300,"currency":"EUR"}`,
			"currency EUR is not among the currencies allowed for payments (CNY, USD). Next: ask the user with builtin_node_follow_up to pay in an allowed currency; do not convert the amount on your own"},
		{"globex", "pay_invoice", `{"payment":{"total":300,"currency":"USD"}}`,
			"currency USD is not among the currencies allowed for payments (CNY). Next: ask the user with builtin_node_follow_up to pay in an allowed currency; do not convert the amount on your own"},
	} {
		v := guards[tt.tenant].Guard(ctx, tt.tenant, request(tt.tool, tt.args, "", abi.LocaleEN))
		if got := message(v); got != tt.want {
			t.Errorf("%s %s %s:\n got %q\nwant %q", tt.tenant, tt.tool, tt.args, got, tt.want)
		}
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
