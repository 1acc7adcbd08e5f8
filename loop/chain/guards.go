package chain

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
)

// Wasm adapts a loaded plugin to the chain under a position name.
func Wasm(name string, p *host.Plugin) Guard { return wasmGuard{name, p} }

type wasmGuard struct {
	name string
	p    *host.Plugin
}

func (w wasmGuard) Name() string { return w.name }

func (w wasmGuard) Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	return w.p.Guard(ctx, tenant, req)
}

func (w wasmGuard) GuardEnvelope(ctx context.Context, tenant string, env *host.Envelope) abi.Verdict {
	return w.p.GuardEnvelope(ctx, tenant, env)
}

// Native runs a guard plugin in-process with the host's conventions (its
// config, only its granted state views, the request's locale, fail closed on
// a panic or contract violation). It is for tests and for benchmarks that
// put a chain beside its wasm build; production chains run wasm.
func Native(name string, p guest.Plugin, config json.RawMessage, opts ...guest.NativeOption) Guard {
	return &nativeGuard{name: name, p: p, config: config, opts: opts}
}

type nativeGuard struct {
	name   string
	p      guest.Plugin
	config json.RawMessage
	opts   []guest.NativeOption
	pool   sync.Pool
}

func (n *nativeGuard) Name() string { return n.name }

func (n *nativeGuard) Guard(ctx context.Context, _ string, req *abi.Request) abi.Verdict {
	req.ABI, req.Kind = abi.Version, abi.RoleGuard
	if req.Config == nil {
		req.Config = n.config
	}
	for k := range req.State {
		if c := abi.Capability(k); !c.IsStateView() || !n.p.Manifest.Grants(c) {
			delete(req.State, k)
		}
	}
	return n.run(ctx, req.Locale, func(dst []byte) []byte { return req.AppendJSON(dst) })
}

func (n *nativeGuard) GuardEnvelope(ctx context.Context, _ string, env *host.Envelope) abi.Verdict {
	req := env.Request()
	config := req.Config
	if config == nil {
		config = n.config
	}
	return n.run(ctx, req.Locale, func(dst []byte) []byte { return env.AppendFor(dst, config, &n.p.Manifest) })
}

func (n *nativeGuard) run(ctx context.Context, l abi.Locale, encode func([]byte) []byte) abi.Verdict {
	r, _ := n.pool.Get().(*guest.Native)
	if r == nil {
		var err error
		if r, err = guest.NewNative(n.p, 1<<20, n.opts...); err != nil {
			return rejected(l, n.name, err)
		}
	}
	defer n.pool.Put(r)
	buf := envelopes.Get().(*[]byte)
	b := encode((*buf)[:0])
	v, err := r.Call(ctx, b)
	*buf = b
	envelopes.Put(buf)
	if err != nil {
		return rejected(l, n.name, err)
	}
	if v.Observation != nil {
		v.Observation.Locale = l
	}
	return v
}

var envelopes = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func rejected(l abi.Locale, name string, err error) abi.Verdict {
	o := abi.Rejected(abi.GuardUnavailable, abi.GuardUnavailable.Reason(l, "plugin", name, "detail", err.Error()), abi.NextRetryLater.Text(l))
	o.Locale = l
	return abi.Verdict{Observation: &o}
}
