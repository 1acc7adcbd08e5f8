package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/loop"
)

// tenant is the tenant a scenario runs as (loop.Config.Tenant).
const tenant = "scenario"

// tenantPlugins are a scenario's own modules, installed for its tenant as
// a deployment installs a tenant's: guards in a chain.Registry, builtins
// with catalog.Install.
type tenantPlugins struct {
	reg      *chain.Registry
	builtins []loop.Builtin
	counts   map[string]*atomic.Int64 // builtin tool → calls that reached the plugin
	refused  map[string]error         // plugins key → install error
	closers  []func()
}

// installPlugins installs the scenario's plugins on h. A module refused at
// install is a setup error unless the scenario expects it (expect.install).
func installPlugins(ctx context.Context, s Scenario, h *host.Host, installed func(PluginInfo)) (*tenantPlugins, error) {
	tp := &tenantPlugins{reg: &chain.Registry{Host: h}, counts: map[string]*atomic.Int64{}, refused: map[string]error{}}
	expected := map[string]bool{}
	for _, in := range s.Expect.Install {
		expected[in.Plugin] = true
	}
	for _, ref := range slices.Sorted(maps.Keys(s.Plugins)) {
		info, err := tp.install(ctx, s, h, ref, s.Plugins[ref])
		switch {
		case err == nil:
			if installed != nil {
				installed(info)
			}
		case expected[ref]:
			tp.refused[ref] = err
		default:
			tp.close()
			return nil, fmt.Errorf("plugins.%s: %w", ref, err)
		}
	}
	return tp, nil
}

// install installs one module and says what it is.
func (tp *tenantPlugins) install(ctx context.Context, s Scenario, h *host.Host, ref string, pm PluginModule) (info PluginInfo, err error) {
	wasm, err := pluginBytes(ctx, s.File, pm)
	if err != nil {
		return info, err
	}
	var grants []abi.Capability
	for _, c := range pm.Capabilities {
		grants = append(grants, abi.Capability(c))
	}
	src := host.Source{Name: ref, Bytes: wasm, SHA256: pm.SHA256}
	m, digest, err := h.Verify(ctx, src, host.Policy{PoolSize: 1, Capabilities: grants})
	if err != nil {
		return info, err
	}
	if ref != chain.Ref(m) && ref != "sha256:"+digest {
		return info, fmt.Errorf("the module is %s (sha256:%s), not %s", chain.Ref(m), digest, ref)
	}
	info = PluginInfo{Kind: KindPlugin, Plugin: ref, Ref: chain.Ref(m), Runtime: "wasm", Digest: "sha256:" + digest,
		Source: SourceTenant, Role: string(m.Role)}
	switch m.Role {
	case abi.RoleGuard:
		_, err := tp.reg.Install(ctx, tenant, src, grants...)
		return info, err
	case abi.RoleBuiltin:
		shipped, err := json.Marshal(m)
		if err != nil {
			return info, err
		}
		inst, err := catalog.Install(ctx, h, catalog.Package{Name: ref, Wasm: wasm, Manifest: shipped, SHA256: digest},
			catalog.Grant{Tenant: tenant, Capabilities: grants})
		if err != nil {
			return info, err
		}
		tp.closers = append(tp.closers, func() { _ = inst.Close(context.Background()) })
		cb := &countedBuiltin{Installed: inst, counts: map[string]*atomic.Int64{}}
		for _, t := range m.Tools {
			n := new(atomic.Int64)
			cb.counts[t.Name], tp.counts[t.Name] = n, n
		}
		tp.builtins = append(tp.builtins, cb)
		return info, nil
	}
	return info, fmt.Errorf("role %q: want guard or builtin", m.Role)
}

func (tp *tenantPlugins) close() {
	if tp == nil {
		return
	}
	tp.reg.Close(context.Background())
	for _, c := range tp.closers {
		c()
	}
}

// calls is how many calls of a third-party builtin tool reached its
// plugin; false for any other tool.
func (tp *tenantPlugins) calls(tool string) (int, bool) {
	if tp == nil {
		return 0, false
	}
	n, ok := tp.counts[tool]
	if !ok {
		return 0, false
	}
	return int(n.Load()), true
}

// checkInstall compares the modules refused at install with the expected.
func (tp *tenantPlugins) checkInstall(want []InstallRefusal) []string {
	var miss []string
	for _, w := range want {
		err := tp.refused[w.Plugin]
		switch {
		case err == nil:
			miss = append(miss, fmt.Sprintf("plugin %s installed, want it refused", w.Plugin))
		case !strings.Contains(err.Error(), w.Contains):
			miss = append(miss, fmt.Sprintf("plugin %s refused with %q, want %q in it", w.Plugin, err.Error(), w.Contains))
		}
	}
	return miss
}

// countedBuiltin counts the calls that reach the builtin's plugin: those
// its argument check let through.
type countedBuiltin struct {
	*catalog.Installed
	counts map[string]*atomic.Int64
}

func (b *countedBuiltin) Builtin(ctx context.Context, t string, req *abi.Request) abi.Verdict {
	if t != b.Tenant {
		return b.Installed.Builtin(ctx, t, req)
	}
	if v, ok := catalog.CheckArgs(b.Manifest(), req); !ok {
		return v
	}
	if n := b.counts[req.Tool]; n != nil {
		n.Add(1)
	}
	return b.Plugin.Builtin(ctx, t, req)
}

// pluginBytes reads a module's file, relative to the scenario file, or
// builds its package.
func pluginBytes(ctx context.Context, file string, pm PluginModule) ([]byte, error) {
	if pm.Path != "" {
		p := pm.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	root, err := moduleRoot(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	out, err := buildWasm(ctx, root, pm.Build)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// wasmBuilds caches modules built from Go packages for the process's life.
var wasmBuilds = struct {
	sync.Mutex
	dir  string
	mods map[string]string
}{mods: map[string]string{}}

// buildWasm builds pkg (relative to root) for wasip1 as a reactor, once
// per process.
func buildWasm(ctx context.Context, root, pkg string) (string, error) {
	wasmBuilds.Lock()
	defer wasmBuilds.Unlock()
	key := filepath.Join(root, pkg)
	if p, ok := wasmBuilds.mods[key]; ok {
		return p, nil
	}
	if wasmBuilds.dir == "" {
		d, err := os.MkdirTemp("", "warden-scenario-wasm-")
		if err != nil {
			return "", err
		}
		wasmBuilds.dir = d
	}
	out := filepath.Join(wasmBuilds.dir, fmt.Sprintf("module%d.wasm", len(wasmBuilds.mods)))
	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w: %s", pkg, err, b)
	}
	wasmBuilds.mods[key] = out
	return out, nil
}
