package scenario

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/plugins"
)

// KindPlugin is the kind of a PluginInfo line of a trace.
const KindPlugin loop.Kind = "PLUGIN"

// PluginInfo names one first-party plugin a run loads: what a trace says
// once at its start, so that a trace can be tied to the exact modules that
// made its decisions.
type PluginInfo struct {
	Kind loop.Kind `json:"kind"`
	// Plugin is the chain position (ArgPolicy, …) or the builtin's slot
	// (control, node, env).
	Plugin string `json:"plugin"`
	// Ref is the manifest's name@version.
	Ref string `json:"ref"`
	// Runtime is "wasm" or "native".
	Runtime string `json:"runtime"`
	// Generation and Digest (sha256:…) identify the wasm module serving
	// the slot; Source says where the modules came from (firstparty.Origin).
	Generation uint64 `json:"generation,omitempty"`
	Digest     string `json:"digest,omitempty"`
	Source     string `json:"source,omitempty"`
	// Module (sha256:…) is the first-party module's own digest when the
	// slot's module is it bound to the slot's plugin (host.SelectPlugin):
	// Digest then names module and plugin both.
	Module string `json:"module,omitempty"`
	// Role is a tenant module's: guard or builtin.
	Role string `json:"role,omitempty"`
}

// String renders the line of the readable trace:
//
//	plugin ArgPolicy gen 1 sha256:3f1c0a9e77b2… argpolicy@1.0.0 (wasm)
//	plugin ArgPolicy argpolicy@1.0.0 (native)
//
// and a scenario's own module (Source "tenant", keyed by its plugins key):
//
//	plugin domainguard@0.1.0 sha256:85f039e1cceb… domainguard@0.1.0 (wasm, tenant guard)
func (p PluginInfo) String() string {
	if p.Runtime != "wasm" {
		return fmt.Sprintf("plugin %s %s (%s)", p.Plugin, p.Ref, p.Runtime)
	}
	d := p.Digest
	if len(d) > len("sha256:")+12 {
		d = d[:len("sha256:")+12] + "…"
	}
	if p.Source == SourceTenant {
		return fmt.Sprintf("plugin %s %s %s (%s, tenant %s)", p.Plugin, d, p.Ref, p.Runtime, p.Role)
	}
	return fmt.Sprintf("plugin %s gen %d %s %s (%s)", p.Plugin, p.Generation, d, p.Ref, p.Runtime)
}

// SourceTenant is the Source of a scenario's own module (its plugins).
const SourceTenant = "tenant"

// LoadPlugins loads the first-party plugins as Run would with o and says
// which they are, in chain order, then the builtins. A caller prints them
// once before its scenarios; Run finds them loaded.
func LoadPlugins(ctx context.Context, o Options) ([]PluginInfo, error) {
	_, _, info, err := firstPartyPlugins(ctx, o, func() time.Time { return Clock })
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return info, nil
}

// firstPartyPlugins returns the first-party guards and builtins, in-process or as
// wasm, and what they are.
func firstPartyPlugins(ctx context.Context, o Options, clock func() time.Time) (map[string]chain.Guard, []loop.Builtin, []PluginInfo, error) {
	guards := map[string]chain.Guard{}
	var info []PluginInfo
	if o.Native {
		for _, p := range plugins.All {
			info = append(info, PluginInfo{Kind: KindPlugin, Plugin: p.Name, Ref: ref(p.Plugin.Manifest), Runtime: "native"})
		}
		return chain.NativeGuards(), loop.NativeBuiltins(clock), info, nil
	}
	set := o.Plugins
	if set == nil {
		var err error
		if set, err = firstparty.Load(ctx, firstparty.Options{}); err != nil {
			return nil, nil, nil, err
		}
	}
	h, err := sharedHost(ctx, o.CacheDir, set)
	if err != nil {
		return nil, nil, nil, err
	}
	slot := func(name, file string) (*host.Slot, error) {
		sl, err := load(ctx, h, name, file, set.Modules[file])
		if err != nil {
			return nil, err
		}
		g := sl.Current()
		pi := PluginInfo{Kind: KindPlugin, Plugin: name, Ref: g.Ref, Runtime: "wasm",
			Generation: g.Number, Digest: "sha256:" + g.Digest, Source: string(set.Origin)}
		if p := sl.Plugin(); p.Selected() != "" {
			pi.Module = "sha256:" + p.ModuleDigest()
		}
		info = append(info, pi)
		return sl, nil
	}
	var builtins []loop.Builtin
	for _, p := range plugins.All {
		sl, err := slot(p.Name, p.File)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s %s: %w", p.Role, p.Name, err)
		}
		if p.Role == abi.RoleGuard {
			guards[p.Name] = sl
		} else {
			builtins = append(builtins, slotBuiltin{sl})
		}
	}
	return guards, builtins, info, nil
}

func ref(m abi.Manifest) string { return m.Name + "@" + m.Version }

// slotBuiltin serves a builtin through its slot.
type slotBuiltin struct{ sl *host.Slot }

func (b slotBuiltin) Manifest() abi.Manifest { return b.sl.Plugin().Manifest() }

func (b slotBuiltin) Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	return b.sl.Builtin(ctx, tenant, req)
}

// The wasm host and its slots are shared by every scenario of the process:
// compiling and starting ten plugins once is what makes wasm affordable per
// scenario. Plugins are stateless between calls (DESIGN), so sharing them
// across scenarios leaks nothing; the host's clock is the scenarios' fixed
// start. A slot is keyed by its name and module digest, so a run with
// other modules (warden run --plugins) gets slots of its own.
var shared struct {
	sync.Mutex
	h     *host.Host
	slots map[slotKey]*host.Slot
}

type slotKey struct{ name, digest string }

// sharedHost returns the shared host, with every module of set compiled: as
// many at once as there are CPUs (a cold compilation cache takes seconds
// per module), where loading them one by one would take them in turn.
func sharedHost(ctx context.Context, cacheDir string, set *firstparty.Set) (*host.Host, error) {
	shared.Lock()
	h, err := newShared(cacheDir)
	if err != nil {
		shared.Unlock()
		return nil, err
	}
	loaded := map[string]bool{}
	for k := range shared.slots {
		loaded[k.digest] = true
	}
	// The plugins bound from one module (the first-party module) share
	// its compilation: it is compiled once.
	var todo []host.Source
	compiling := map[string]bool{}
	for name, b := range set.Modules {
		if m := host.ModuleDigest(b); !loaded[host.Digest(b)] && !compiling[m] {
			compiling[m] = true
			todo = append(todo, host.Source{Name: name + ".wasm", Bytes: b})
		}
	}
	shared.Unlock()
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, src := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// A module that does not compile is reported by its load.
			_ = h.Precompile(context.WithoutCancel(ctx), src, policy)
		})
	}
	wg.Wait()
	return h, nil
}

// newShared returns the shared host, made on first use; shared is locked.
func newShared(cacheDir string) (*host.Host, error) {
	if shared.h == nil {
		h, err := host.New(host.Options{CacheDir: cacheDir, Clock: func() time.Time { return Clock }})
		if err != nil {
			return nil, err
		}
		shared.h, shared.slots = h, map[slotKey]*host.Slot{}
	}
	return shared.h, nil
}

// tenantHost returns the shared host for a scenario's own modules (which
// run as wasm also when the first-party plugins run in-process).
func tenantHost(cacheDir string) (*host.Host, error) {
	shared.Lock()
	defer shared.Unlock()
	return newShared(cacheDir)
}

// policy is every first-party plugin's, but for its grant (grantOf).
var policy = host.Policy{Limits: abi.Limits{TimeoutMs: 5000}}

// grantOf is what a first-party slot grants its module: the capabilities
// of the first-party plugin of that name, and nothing else, so a module
// given in its place (warden run --plugins) that asks for more is refused.
func grantOf(name string) []abi.Capability {
	if p, ok := plugins.Lookup(name); ok {
		return p.Plugin.Manifest.Capabilities
	}
	return nil
}

func load(ctx context.Context, h *host.Host, name, file string, module []byte) (*host.Slot, error) {
	shared.Lock()
	defer shared.Unlock()
	key := slotKey{name, host.Digest(module)}
	if sl, ok := shared.slots[key]; ok {
		return sl, nil
	}
	if module == nil {
		return nil, fmt.Errorf("no module %s.wasm", file)
	}
	src := host.Source{Name: file + ".wasm", Bytes: module}
	pol := policy
	pol.Capabilities = grantOf(name)
	sl, err := h.NewSlot(context.WithoutCancel(ctx), name, src, pol, nil)
	if err != nil {
		return nil, err
	}
	shared.slots[key] = sl
	return sl, nil
}
