package chain_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
)

type echo struct{}

func (echo) CallTool(_ context.Context, _ string, args json.RawMessage) (chain.Response, error) {
	return chain.Response{Content: args}, nil
}

// TestWasmGuards runs wasm guards in a chain: a guard that fails (a trap)
// fails the call closed, and a good one lets it through.
func TestWasmGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	load := func(name string) *host.Plugin {
		p, err := h.Load(ctx, host.Source{Name: name, Bytes: testdata.Bytes(t, name)}, host.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := chain.Wasm("Good", load("good")), chain.Wasm("Broken", load("panichandler"))
	c := &chain.Chain{Before: []chain.Guard{good}, After: []chain.Guard{good}, Invoker: &chain.Invoker{Caller: echo{}}}
	res := c.Run(ctx, chain.Call{Tenant: "a", Tool: "t", Args: []byte(`{"x":1}`)})
	if !res.Invoked || res.Observation.Outcome != abi.OutcomeSuccess || string(res.Response) != `{"x":1}` {
		t.Fatalf("good chain: %+v", res)
	}
	c.Before = append(c.Before, bad)
	res = c.Run(ctx, chain.Call{Tenant: "a", Tool: "t", Args: []byte(`{"x":1}`)})
	want := "插件 panichandler@1.0.0 运行异常：panic: boom。下一步：稍后重试一次；仍失败时调用 builtin_node_fail 说明原因"
	if res.Invoked || res.Observation.Code != abi.PluginTrap || res.Observation.Message() != want {
		t.Fatalf("broken guard: invoked %v, %s %q", res.Invoked, res.Observation.Code, res.Observation.Message())
	}
}
