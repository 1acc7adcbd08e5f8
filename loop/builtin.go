package loop

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/plugins"
)

// Builtin is a loaded builtin plugin. *host.Plugin satisfies it; so does
// NativeBuiltin.
type Builtin interface {
	Manifest() abi.Manifest
	// Builtin runs one of the plugin's tools; a plugin failure is already
	// an observation.
	Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict
}

// NativeBuiltin runs a builtin plugin in-process with the host's
// conventions (only its granted state views, the request's locale, a panic
// or broken result contract as FAILED). It is for tests and benchmarks;
// production builtins run as wasm through the host.
func NativeBuiltin(p guest.Plugin, opts ...guest.NativeOption) Builtin {
	return &nativeBuiltin{p: p, opts: opts}
}

// NativeBuiltins are the first-party builtins (package plugins) in-process,
// in the order sessions list them; a builtin whose manifest asks for the
// clock reads clock.
func NativeBuiltins(clock func() time.Time) []Builtin {
	var out []Builtin
	for _, p := range plugins.Builtins() {
		var opts []guest.NativeOption
		if p.Plugin.Manifest.Grants(abi.CapClock) {
			opts = append(opts, guest.WithClock(clock))
		}
		out = append(out, NativeBuiltin(p.Plugin, opts...))
	}
	return out
}

type nativeBuiltin struct {
	p    guest.Plugin
	opts []guest.NativeOption
	pool sync.Pool
}

func (n *nativeBuiltin) Manifest() abi.Manifest { return n.p.Manifest }

func (n *nativeBuiltin) Builtin(ctx context.Context, _ string, req *abi.Request) abi.Verdict {
	l := req.Locale
	if !n.p.Manifest.Provides(req.Tool) {
		o := abi.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", req.Tool), abi.NextCatalog.Text(l))
		o.Locale = l
		return abi.Verdict{Observation: &o}
	}
	r, _ := n.pool.Get().(*guest.Native)
	if r == nil {
		var err error
		if r, err = guest.NewNative(n.p, 1<<20, n.opts...); err != nil {
			return n.failed(l, err)
		}
	}
	defer n.pool.Put(r)
	req.ABI, req.Kind = abi.Version, abi.RoleBuiltin
	host.FilterViews(req.State, n.p.Manifest.Capabilities)
	b, err := json.Marshal(req)
	if err != nil {
		return n.failed(l, err)
	}
	v, err := r.Call(ctx, b)
	if err != nil {
		return n.failed(l, err)
	}
	if v.Observation != nil {
		v.Observation.Locale = l
	}
	return v
}

func (n *nativeBuiltin) failed(l abi.Locale, err error) abi.Verdict {
	o := abi.Failed(abi.PluginTrap, abi.PluginTrap.Reason(l, "plugin", n.p.Manifest.Name, "detail", err.Error()), abi.NextRetryLater.Text(l))
	o.Locale = l
	return abi.Verdict{Observation: &o}
}
