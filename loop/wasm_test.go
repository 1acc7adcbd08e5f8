package loop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/plugins"
)

// TestWasmEndToEnd runs scenarios 1 and 8 with every first-party guard and
// builtin loaded as wasm through the host.
func TestWasmEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and loads ten wasm plugins")
	}
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), Clock: func() time.Time { return fixedClock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	// Each is granted its own capabilities, as a first-party slot does.
	pkgs, grants := map[string]string{}, map[string][]abi.Capability{}
	for _, p := range plugins.All {
		name := p.Name
		if p.Role == abi.RoleBuiltin {
			name = "builtin:" + name
		}
		pkgs[name], grants[name] = "./"+p.Main, p.Plugin.Manifest.Capabilities
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	loaded := map[string]*host.Plugin{}
	errs := make(chan error, len(pkgs))
	for name, pkg := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, err := testdata.Build(pkg)
			if err != nil {
				errs <- err
				return
			}
			src, err := host.ReadSource(path, "")
			if err != nil {
				errs <- err
				return
			}
			p, err := h.Load(ctx, src, host.Policy{Limits: abi.Limits{TimeoutMs: 5000}, Capabilities: grants[name]})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			loaded[name] = p
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	guards := map[string]chain.Guard{}
	var builtins []loop.Builtin
	for name, p := range loaded {
		if len(name) > 8 && name[:8] == "builtin:" {
			builtins = append(builtins, p)
			continue
		}
		guards[name] = chain.Wasm(name, p)
	}
	turns := append(append([]scripted.Turn(nil), gatedTurns...),
		scripted.Turn{Expect: &scripted.Expect{Tool: "create_site", Contains: "调用成功"}, ToolCalls: []scripted.Call{call("builtin_node_finish", `{"output":"网站 Spring Launch 已创建"}`)}})
	hr := newHarness(t, setup{turns: turns, guards: guards, builtins: builtins,
		answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: created}}}})
	exit, err := hr.runner.Run(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if exit.Status != state.Suspended || exit.Suspension.Kind != abi.SuspendApproval {
		t.Fatalf("exit %+v", exit)
	}
	exit, err = hr.runner.Approve(ctx, "n1", loop.Confirm)
	if err != nil {
		t.Fatal(err)
	}
	if exit.Status != state.Done {
		t.Fatalf("exit %+v", exit)
	}
	hr.wantTools(
		"query_space SUCCESS stalls=0",
		"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
		"builtin_node_approval SUCCESS stalls=0",
		"create_site SUCCESS stalls=0",
		"builtin_node_finish SUCCESS stalls=0",
	)
	hr.done()
}
