package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/jsonschema"
)

// ErrUnknownGuard is returned when a skill names a tenant guard the
// registry does not hold for that tenant.
var ErrUnknownGuard = errors.New("unknown tenant guard")

// Registry holds the tenant guard modules each tenant installed and loads
// them, once per (tenant, ref, config, failure policy), as the skills that
// attach them ask. Each tenant's guards are loaded for that tenant only: a
// tenant's skill cannot reach another tenant's module, and every load has
// its own pools.
//
// The way in, for every front door:
//
//	reg.Install(ctx, tenant, src, grants...)     // verify, check grants, keep
//	problems := reg.Check(tenant, skillKey, c.Guards) // at skill load: unresolved refs
//	placements, err := reg.Placements(ctx, tenant, c.Guards)
//	ch, err := chain.New(firstParty, placements, inv)
//
// A skill whose Check reports problems, or whose Placements fails, must not
// load: a guard that is configured but not in effect is never ignored.
type Registry struct {
	Host *host.Host
	// Policy is the base policy of tenant guards (limits, pool size, the
	// capabilities granted to every module); each attachment adds its
	// config. Its failure policy is ignored: the chain applies each
	// attachment's own (see Tenant).
	Policy host.Policy

	mu      sync.Mutex
	modules map[string]map[string]*module // tenant → ref → module
	loaded  map[string]*host.Plugin       // tenant|digest|config → plugin
}

// module is one installed guard module.
type module struct {
	src      host.Source
	manifest abi.Manifest
	digest   string
	grant    []abi.Capability
}

// Install registers a guard module for a tenant. The module is verified now
// (everything but its config) so a bad module fails at install; it is then
// reachable by "name@version" from its manifest and by "sha256:<digest>".
// grants are the capabilities the installer gives this module, besides
// Policy.Capabilities: nothing else by default, and a manifest that asks
// for more is refused (host.ErrNotGranted, naming what it asked for and
// what it may have). Installing another module under the same
// name@version replaces it for the skills loaded after.
func (r *Registry) Install(ctx context.Context, tenant string, src host.Source, grants ...abi.Capability) (abi.Manifest, error) {
	grant := slices.Clone(r.Policy.Capabilities)
	for _, c := range grants {
		if !slices.Contains(grant, c) {
			grant = append(grant, c)
		}
	}
	m, digest, err := r.Host.Verify(ctx, src, host.Policy{Limits: r.Policy.Limits, PoolSize: 1, Capabilities: grant})
	if err != nil {
		return abi.Manifest{}, fmt.Errorf("chain: install for tenant %s: %w", tenant, err)
	}
	if m.Role != abi.RoleGuard {
		return abi.Manifest{}, fmt.Errorf("chain: install %s for tenant %s: role %s, want guard: %w", m.Name, tenant, m.Role, host.ErrManifest)
	}
	src.SHA256 = digest
	mod := &module{src: src, manifest: m, digest: digest, grant: grant}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.modules == nil {
		r.modules = map[string]map[string]*module{}
	}
	if r.modules[tenant] == nil {
		r.modules[tenant] = map[string]*module{}
	}
	r.modules[tenant][Ref(m)] = mod
	r.modules[tenant]["sha256:"+digest] = mod
	return m, nil
}

// Ref is a manifest's "name@version", the ref a contract names it by.
func Ref(m abi.Manifest) string { return m.Name + "@" + m.Version }

// Resolve returns the manifest and digest of the module a tenant's ref
// names, without loading it.
func (r *Registry) Resolve(tenant, ref string) (abi.Manifest, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mod, ok := r.modules[tenant][ref]
	if !ok {
		return abi.Manifest{}, "", false
	}
	return mod.manifest, mod.digest, true
}

// Check reports, as load errors of rule W1 at guards[i].ref, every guard of
// a skill whose ref the tenant has not installed or whose module does not
// run in the phase the skill puts it in, and as load errors of rule W5 at
// guards[i].config every config the module's configSchema refuses (an
// absent config is checked as {}). Nil means every guard resolves.
func (r *Registry) Check(tenant, skillKey string, guards []contract.Guard) []*contract.LoadError {
	var out []*contract.LoadError
	for i, g := range guards {
		path := fmt.Sprintf("guards[%d].ref", i)
		m, _, ok := r.Resolve(tenant, g.Ref)
		switch {
		case !ok:
			detail := fmt.Sprintf("%s is not installed for tenant %s", g.Ref, tenant)
			if tenant == "" {
				detail = fmt.Sprintf("%s is not installed", g.Ref)
			}
			out = append(out, &contract.LoadError{SkillKey: skillKey, Path: path, Rule: contract.RuleGuardRef, Detail: detail})
		case !m.RunsIn(abi.Phase(g.Phase)):
			out = append(out, &contract.LoadError{SkillKey: skillKey, Path: path, Rule: contract.RuleGuardRef,
				Detail: fmt.Sprintf("%s (%s) runs in phases %v, not %s", g.Ref, Ref(m), m.Phases, g.Phase)})
		default:
			if msg := configProblems(m.ConfigSchema, g.Config); msg != "" {
				out = append(out, &contract.LoadError{SkillKey: skillKey, Path: fmt.Sprintf("guards[%d].config", i), Rule: contract.RuleGuardConfig,
					Detail: fmt.Sprintf("%s's configSchema refuses it: %s", g.Ref, msg)})
			}
		}
	}
	return out
}

// Remove unregisters the module a tenant's ref names (both its refs) and
// closes its loaded plugins. Chains built before keep a closed guard, which
// fails their calls closed; rebuild them. It reports whether the ref was
// installed.
func (r *Registry) Remove(ctx context.Context, tenant, ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	mod, ok := r.modules[tenant][ref]
	if !ok {
		return false
	}
	delete(r.modules[tenant], Ref(mod.manifest))
	delete(r.modules[tenant], "sha256:"+mod.digest)
	prefix := tenant + "|" + mod.digest + "|"
	for k, p := range r.loaded {
		if strings.HasPrefix(k, prefix) {
			_ = p.Close(ctx)
			delete(r.loaded, k)
		}
	}
	return true
}

// Attach resolves and loads a skill's tenant guards for a tenant: the
// placements to build its chain with (chain.New), or every problem that
// keeps the skill from loading, as load errors of the skill: a ref the
// tenant has not installed or whose module does not run in the phase (rule
// W1, guards[i].ref), a config the guard's configSchema refuses (rule W5,
// guards[i].config), a module that does not load (rule W1). With problems,
// the placements are nil and the skill must be dropped, never run without
// its guards.
func (r *Registry) Attach(ctx context.Context, tenant, skillKey string, guards []contract.Guard) ([]Placement, []*contract.LoadError) {
	problems := r.Check(tenant, skillKey, guards)
	if len(problems) > 0 {
		return nil, problems
	}
	out := make([]Placement, 0, len(guards))
	for i, g := range guards {
		ps, err := r.Placements(ctx, tenant, []contract.Guard{g})
		if err != nil {
			le := &contract.LoadError{SkillKey: skillKey, Path: fmt.Sprintf("guards[%d].ref", i), Rule: contract.RuleGuardRef, Detail: err.Error()}
			if errors.Is(err, host.ErrConfig) {
				le.Path, le.Rule = fmt.Sprintf("guards[%d].config", i), contract.RuleGuardConfig
			}
			problems = append(problems, le)
			continue
		}
		out = append(out, ps...)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

// Placements resolves a skill's tenant guards (its contract's guards) for a
// tenant into chain placements. Each guard is a Tenant: the chain applies
// its failure policy.
func (r *Registry) Placements(ctx context.Context, tenant string, guards []contract.Guard) ([]Placement, error) {
	out := make([]Placement, 0, len(guards))
	for _, g := range guards {
		p, err := r.load(ctx, tenant, g)
		if err != nil {
			return nil, err
		}
		out = append(out, Placement{Guard: &Tenant{Ref: g.Ref, Plugin: p, Failure: failurePolicy(g.Failure)}, Phase: abi.Phase(g.Phase), Position: g.Position})
	}
	return out, nil
}

func failurePolicy(f contract.FailurePolicy) host.FailurePolicy {
	switch f {
	case contract.FailOpen:
		return host.FailOpen
	case contract.FailShadow:
		return host.Shadow
	}
	return host.FailClosed
}

func (r *Registry) load(ctx context.Context, tenant string, g contract.Guard) (*host.Plugin, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mod, ok := r.modules[tenant][g.Ref]
	if !ok {
		return nil, fmt.Errorf("chain: tenant %s guard %s: %w", tenant, g.Ref, ErrUnknownGuard)
	}
	if !mod.manifest.RunsIn(abi.Phase(g.Phase)) {
		return nil, fmt.Errorf("chain: tenant %s guard %s does not run in phase %s: %w", tenant, g.Ref, g.Phase, host.ErrManifest)
	}
	key := strings.Join([]string{tenant, mod.digest, string(g.Config)}, "|")
	if p, ok := r.loaded[key]; ok {
		return p, nil
	}
	pol := r.Policy
	pol.Config = g.Config
	pol.Capabilities = mod.grant
	// The chain applies the attachment's failure policy; the plugin reports
	// every failure as the observation a closed guard gives.
	pol.Failure = host.FailClosed
	p, err := r.Host.Load(ctx, mod.src, pol)
	if err != nil {
		return nil, fmt.Errorf("chain: tenant %s guard %s: %w", tenant, g.Ref, err)
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

// configProblems checks a guard's config against its module's
// configSchema as the host does at load; "" when it passes.
func configProblems(schema, config json.RawMessage) string {
	if len(schema) == 0 {
		return ""
	}
	s, err := jsonschema.Shared.Get(string(schema))
	if err != nil {
		return "configSchema: " + err.Error()
	}
	doc := string(config)
	if len(config) == 0 {
		doc = "{}"
	}
	errs := s.ValidateString(doc)
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}
