package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
)

// ErrUnknownGuard is returned when a skill names a tenant guard the
// registry does not hold for that tenant.
var ErrUnknownGuard = errors.New("unknown tenant guard")

// Registry holds the tenant guard modules each tenant installed and loads
// them, once per (tenant, ref, config, failure policy), as the skills that
// attach them ask. Each tenant's guards are loaded for that tenant only: a
// tenant's skill cannot reach another tenant's module, and every load has
// its own pools.
type Registry struct {
	Host *host.Host
	// Policy is the base policy of tenant guards (limits, pool size, the
	// capabilities granted); each attachment adds its config and failure
	// policy.
	Policy host.Policy

	mu      sync.Mutex
	modules map[string]map[string]host.Source // tenant → ref → module
	loaded  map[string]*host.Plugin           // tenant|ref|failure|config → plugin
}

// Install registers a module for a tenant. The module is verified now
// (everything but its config) so a bad module fails at install; it is then
// reachable by "name@version" from its manifest and by "sha256:<digest>".
func (r *Registry) Install(ctx context.Context, tenant string, src host.Source) (abi.Manifest, error) {
	m, digest, err := r.Host.Verify(ctx, src, host.Policy{Limits: r.Policy.Limits, PoolSize: 1, Capabilities: r.Policy.Capabilities})
	if err != nil {
		return abi.Manifest{}, fmt.Errorf("chain: install for tenant %s: %w", tenant, err)
	}
	if m.Role != abi.RoleGuard {
		return abi.Manifest{}, fmt.Errorf("chain: install %s for tenant %s: role %s, want guard: %w", m.Name, tenant, m.Role, host.ErrManifest)
	}
	src.SHA256 = digest
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.modules == nil {
		r.modules = map[string]map[string]host.Source{}
	}
	if r.modules[tenant] == nil {
		r.modules[tenant] = map[string]host.Source{}
	}
	r.modules[tenant][m.Name+"@"+m.Version] = src
	r.modules[tenant]["sha256:"+digest] = src
	return m, nil
}

// Placements resolves a skill's tenant guards (its contract's guards) for a
// tenant into chain placements.
func (r *Registry) Placements(ctx context.Context, tenant string, guards []contract.Guard) ([]Placement, error) {
	out := make([]Placement, 0, len(guards))
	for _, g := range guards {
		p, err := r.load(ctx, tenant, g)
		if err != nil {
			return nil, err
		}
		out = append(out, Placement{Guard: Wasm(g.Ref, p), Phase: abi.Phase(g.Phase), Position: g.Position})
	}
	return out, nil
}

func (r *Registry) load(ctx context.Context, tenant string, g contract.Guard) (*host.Plugin, error) {
	key := strings.Join([]string{tenant, g.Ref, string(g.Failure), string(g.Config)}, "|")
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.loaded[key]; ok {
		return p, nil
	}
	src, ok := r.modules[tenant][g.Ref]
	if !ok {
		return nil, fmt.Errorf("chain: tenant %s guard %s: %w", tenant, g.Ref, ErrUnknownGuard)
	}
	pol := r.Policy
	pol.Config = g.Config
	pol.Failure = host.FailurePolicy(g.Failure)
	p, err := r.Host.Load(ctx, src, pol)
	if err != nil {
		return nil, fmt.Errorf("chain: tenant %s guard %s: %w", tenant, g.Ref, err)
	}
	if !p.Manifest().RunsIn(abi.Phase(g.Phase)) {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("chain: tenant %s guard %s does not run in phase %s: %w", tenant, g.Ref, g.Phase, host.ErrManifest)
	}
	if r.loaded == nil {
		r.loaded = map[string]*host.Plugin{}
	}
	r.loaded[key] = p
	return p, nil
}

// Close closes every loaded tenant guard.
func (r *Registry) Close(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.loaded {
		_ = p.Close(ctx)
		delete(r.loaded, k)
	}
}
