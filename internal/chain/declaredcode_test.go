package chain_test

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestDeclaredCodeInChain: a tenant guard's refusal with a code it declared
// reaches the call's result as <plugin>:<NAME> with the guard's reason and
// next step, and the tool is not called; a guard reporting another
// plugin's code fails the call closed.
func TestDeclaredCodeInChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	load := func(name string) chain.Guard {
		p, err := h.Load(ctx, host.Source{Name: name, Bytes: testdata.Bytes(t, name)}, host.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		return chain.Wasm(name, p)
	}
	dg, other := load("declaredcode"), load("othercode")
	tests := []struct {
		name    string
		guard   chain.Guard
		args    string
		invoked bool
		code    abi.Code
		message string
	}{
		{"allowed domain", dg, `{"domain":"spring.example.com"}`, true, "", "工具 create_website 调用成功"},
		{"blocked domain", dg, `{"domain":"evil.org"}`, false, "domainguard:DOMAIN_BLOCKED",
			"域名 evil.org 不在允许的范围内。下一步：换用 example.com 下的域名"},
		{"another plugin's code", other, `{"domain":"evil.org"}`, false, abi.PluginContractViolation,
			"插件 othercode@1.0.0 违反结果约定：非成功结果的错误码未登记：domainguard:DOMAIN_BLOCKED。下一步：调用 builtin_node_fail 说明该插件不可用"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &chain.Chain{Before: []chain.Guard{tt.guard}, Invoker: &chain.Invoker{Caller: echo{}}}
			res := c.Run(ctx, chain.Call{Tenant: "acme", Tool: "create_website", Args: []byte(tt.args)})
			if res.Invoked != tt.invoked || res.Observation.Code != tt.code || res.Observation.Message() != tt.message {
				t.Fatalf("invoked %v, %s %q\nwant invoked %v, %s %q", res.Invoked, res.Observation.Code, res.Observation.Message(),
					tt.invoked, tt.code, tt.message)
			}
		})
	}
}
