package chain

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/services"
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

func (w wasmGuard) Identity() (string, uint64) { return w.p.Ref(), w.p.Generation() }

// Native runs a guard plugin in-process with the host's conventions (its
// config, only its granted state views, the request's locale, fail closed on
// a panic or contract violation). It is for tests and for benchmarks that
// put a chain beside its wasm build; production chains run wasm.
func Native(name string, p guest.Plugin, config json.RawMessage, opts ...guest.NativeOption) Guard {
	return &nativeGuard{name: name, p: p, config: config, opts: opts, ref: p.Manifest.Name + "@" + p.Manifest.Version}
}

type nativeGuard struct {
	name   string
	p      guest.Plugin
	config json.RawMessage
	opts   []guest.NativeOption
	ref    string // name@version, for the trace
	pool   sync.Pool
}

func (n *nativeGuard) Name() string { return n.name }

func (n *nativeGuard) Identity() (string, uint64) { return n.ref, 0 }

func (n *nativeGuard) Guard(ctx context.Context, _ string, req *abi.Request) abi.Verdict {
	req.ABI, req.Kind = abi.Version, abi.RoleGuard
	if req.Config == nil {
		req.Config = n.config
	}
	host.FilterViews(req.State, n.p.Manifest.Capabilities)
	return n.run(ctx, req.Locale, req, nil, nil)
}

func (n *nativeGuard) GuardEnvelope(ctx context.Context, _ string, env *host.Envelope) abi.Verdict {
	req := env.Request()
	config := req.Config
	if config == nil {
		config = n.config
	}
	return n.run(ctx, req.Locale, nil, env, config)
}

// run encodes the guard's envelope, req's or env's with config, and calls
// the plugin on it; env's members are indexed from its parts
// (host.Envelope.MembersFor).
func (n *nativeGuard) run(ctx context.Context, l abi.Locale, req *abi.Request, env *host.Envelope, config json.RawMessage) abi.Verdict {
	r, _ := n.pool.Get().(*guest.Native)
	if r == nil {
		var err error
		if r, err = guest.NewNative(n.p, 1<<20, n.opts...); err != nil {
			return rejected(l, n.name, err)
		}
	}
	defer n.pool.Put(r)
	buf := envelopes.Get().(*[]byte)
	var v abi.Verdict
	var err error
	if env != nil {
		b := env.AppendFor((*buf)[:0], config, &n.p.Manifest)
		v, err = r.CallIndexed(ctx, b, func(m *services.Members) { env.MembersFor(m, b, config, &n.p.Manifest) })
		*buf = b
	} else {
		b := req.AppendJSON((*buf)[:0])
		v, err = r.Call(ctx, b)
		*buf = b
	}
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

// Tenant is a tenant guard as a skill attaches it (Registry.Placements
// makes them): the loaded plugin, named by the skill's ref, and the
// attachment's failure policy, which the chain applies so that what the
// guard decided shows in the call's trace even when the policy sets it
// aside:
//
//   - closed: the guard's verdict stands; its own failure (trap, timeout,
//     broken contract, …) rejects the call with the host's code and next
//     step.
//   - open: the guard's verdict stands, but its own failure lets the call
//     through (Step.Policy "open").
//   - shadow: the guard runs and its verdict is recorded (Step.Policy
//     "shadow"), never applied: no observation, rewrite, fact or effect.
//
// The plugin must be loaded fail closed, so that its failures reach the
// chain as observations.
type Tenant struct {
	Ref     string
	Plugin  *host.Plugin
	Failure host.FailurePolicy
}

// Name is the ref the skill attached the guard by.
func (t *Tenant) Name() string { return t.Ref }

// Guard runs the plugin; the chain applies the failure policy.
func (t *Tenant) Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	return t.Plugin.Guard(ctx, tenant, req)
}

// GuardEnvelope runs the plugin on the phase's shared envelope.
func (t *Tenant) GuardEnvelope(ctx context.Context, tenant string, env *host.Envelope) abi.Verdict {
	return t.Plugin.GuardEnvelope(ctx, tenant, env)
}

// FailurePolicy is the attachment's failure policy.
func (t *Tenant) FailurePolicy() host.FailurePolicy { return t.Failure }

// Identity is the plugin's name@version and generation.
func (t *Tenant) Identity() (string, uint64) { return t.Plugin.Ref(), t.Plugin.Generation() }

// Policied is a guard whose failure policy the chain applies (Tenant).
type Policied interface {
	Guard
	FailurePolicy() host.FailurePolicy
}

// Identified is a guard that says which plugin serves it: its
// name@version and slot generation (0 outside a slot).
type Identified interface {
	Identity() (ref string, generation uint64)
}

// identify names the plugin serving a guard now. A slot names its serving
// generation; a swap between the call and this look is possible but
// only under a concurrent rollout.
func identify(g Guard) (string, uint64) {
	switch x := g.(type) {
	case Identified:
		return x.Identity()
	case *host.Slot:
		cur := x.Current()
		return cur.Ref, cur.Number
	}
	return "", 0
}

// applyPolicy applies a Policied guard's failure policy to its verdict; it
// returns the verdict the chain goes on with and the policy that set the
// guard's own aside ("" when it stands).
func applyPolicy(g Guard, v abi.Verdict) (abi.Verdict, host.FailurePolicy) {
	pg, ok := g.(Policied)
	if !ok {
		return v, ""
	}
	switch pg.FailurePolicy() {
	case host.Shadow:
		return abi.Verdict{Pass: true}, host.Shadow
	case host.FailOpen:
		if v.Observation != nil && PluginFailure(v.Observation.Code) {
			return abi.Verdict{Pass: true}, host.FailOpen
		}
	}
	return v, ""
}

// PluginFailure reports whether code says a plugin itself failed (the
// host's 50001–50099 range, which no plugin may report as its own verdict).
func PluginFailure(code abi.Code) bool {
	i, ok := code.Info()
	return ok && i.HostReserved && i.Number/100 == 500
}
