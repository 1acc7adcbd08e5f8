package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// pluginNameRe is the name of a tenant plugin: its manifest's name, as a
// contract guard ref spells it (name@version).
var pluginNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Who acted on a tenant's registry.
const (
	byTenant = "tenant"
	byAdmin  = "admin"
)

// PluginVersion is one version of a tenant's plugin as the API shows it.
type PluginVersion struct {
	Version string `json:"version"`
	// Ref is the name@version a skill contract's guards: names it by;
	// "sha256:<digest>" names it too.
	Ref          string          `json:"ref"`
	Digest       string          `json:"digest"`
	Role         string          `json:"role"`
	Capabilities []string        `json:"capabilities"`
	Manifest     json.RawMessage `json:"manifest"`
	InstalledBy  string          `json:"installed_by"`
	Installed    time.Time       `json:"installed"`
	// Status is "installed", or "attached" when a skill attaches it.
	Status string `json:"status"`
	// AttachedBy are the tenant's skills whose contract attaches it.
	AttachedBy []string `json:"attached_by"`
}

// PluginInfo is a tenant's plugin: every version installed, oldest first.
type PluginInfo struct {
	Name     string          `json:"name"`
	Tenant   string          `json:"tenant"`
	Versions []PluginVersion `json:"versions"`
}

// tenantRegistry is the server's view of the tenants' plugins: the store's
// records, and the guards loaded from them (chain.Registry, keyed by
// digest, so a module is fetched and verified once per process).
type tenantRegistry struct {
	reg *chain.Registry

	mu sync.Mutex
	// builtins are the tenants' builtin modules loaded, by tenant|digest.
	builtins map[string]*catalog.Installed
}

// registry is the store of tenants' plugins and skills; nil when the
// server has none.
func (s *Server) registry() store.Registry {
	if s.opt.Registry != nil {
		return s.opt.Registry
	}
	if r, ok := s.dir.(store.Registry); ok {
		return r
	}
	return nil
}

// tenantOrAdmin authenticates a tenant key (acting for its own tenant) or
// an admin key, which names the tenant it acts for with ?tenant=.
func (s *Server) tenantOrAdmin(h func(w http.ResponseWriter, r *http.Request, tenant, by string) error) http.Handler {
	tenantH := s.tenant(func(w http.ResponseWriter, r *http.Request, tenant string) error {
		if t := r.URL.Query().Get("tenant"); r.URL.Query().Has("tenant") && t != tenant {
			return fail(http.StatusForbidden, CodeForbidden, "a tenant key acts for its own tenant only; ?tenant= is for admin keys")
		}
		return h(w, r, tenant, byTenant)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearer(r)
		if !ok || !anyKey(s.admins, sha256Sum(key)) {
			tenantH.ServeHTTP(w, r)
			return
		}
		t := r.URL.Query().Get("tenant")
		if err := s.knownTenant(t); err != nil {
			s.report(w, r, err)
			return
		}
		if err := h(w, r, t, byAdmin); err != nil {
			s.report(w, r, err)
		}
	})
}

// knownTenant checks an admin request's ?tenant=.
func (s *Server) knownTenant(t string) error {
	if t == "" {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "an admin key names the tenant it acts for: ?tenant=NAME")
	}
	for _, v := range s.keys {
		if v == t {
			return nil
		}
	}
	return fail(http.StatusNotFound, CodeTenantNotFound, "no tenant "+t)
}

// onlyQuery refuses query parameters other than allowed (and tenant).
func onlyQuery(r *http.Request, allowed ...string) error {
	for k := range r.URL.Query() {
		if k != "tenant" && !slices.Contains(allowed, k) {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	return nil
}

// registryOf answers 404 registry_off when the server keeps no registry.
func (s *Server) registryOf() (store.Registry, error) {
	reg := s.registry()
	if reg == nil {
		return nil, fail(http.StatusNotFound, CodeRegistryOff, "this server keeps no tenant plugins or skills")
	}
	return reg, nil
}

// PluginInstall is the JSON body of a tenant plugin install.
type PluginInstall struct {
	// Module is the .wasm module (base64).
	Module []byte `json:"module"`
	// SHA256 is the module's digest (hex, "sha256:" allowed); required.
	SHA256 string `json:"sha256"`
}

// commandBuild is how a Go plugin is built as a reactor.
const commandBuild = "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm ./cmd"

// putPlugin installs a version of a tenant's plugin: the module is pinned
// by its sha256, verified and load-checked by the host, its manifest must
// name it as the path does, be a guard or a builtin and ask for no
// capability the tenant may not have. It is then kept in the store, where
// every instance finds it.
//
// It stays long: the install's checks one after another, each a refusal
// with its own answer.
func (s *Server) putPlugin(w http.ResponseWriter, r *http.Request, tenant, by string) error {
	reg, err := s.registryOf()
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	if !pluginNameRe.MatchString(name) {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "a plugin name must match "+pluginNameRe.String())
	}
	var req PluginInstall
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/wasm" {
		if err := onlyQuery(r, "sha256"); err != nil {
			return err
		}
		if r.Header.Get("Warden-Config") != "" {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "a tenant plugin takes no Warden-Config: its config is given where a skill attaches it")
		}
		req.SHA256 = r.URL.Query().Get("sha256")
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpload))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the module exceeds %d bytes", maxUpload))
		}
		if err != nil {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "the module could not be read: "+err.Error())
		}
		req.Module = b
	} else {
		if err := onlyQuery(r); err != nil {
			return err
		}
		if err := decode(w, r, maxUpload, &req); err != nil {
			return err
		}
	}
	switch {
	case len(req.Module) == 0:
		return fail(http.StatusBadRequest, CodeInvalidRequest, "module is required")
	case strings.TrimSpace(req.SHA256) == "":
		return fail(http.StatusBadRequest, CodeInvalidRequest, "sha256 is required: the module's hex sha256 (?sha256= with application/wasm)")
	case s.opt.Host == nil:
		return fail(http.StatusNotFound, CodeRegistryOff, "this server has no plugin host")
	}
	if err := checkReactor(req.Module); err != nil {
		return err
	}
	src := host.Source{Name: name, Bytes: req.Module, SHA256: req.SHA256}
	// Verified with the tenant's allow-list as its grant: the host refuses
	// a manifest asking for more.
	m, digest, err := s.opt.Host.Verify(context.WithoutCancel(r.Context()), src,
		host.Policy{Limits: s.opt.Policy.Limits, PoolSize: 1, Capabilities: s.opt.Capabilities[tenant]})
	var ge *host.GrantError
	if errors.As(err, &ge) {
		return capabilityDenied(tenant, name, ge.Excess, s.opt.Capabilities[tenant])
	}
	if err != nil {
		return candidateError(err)
	}
	switch {
	case m.Name != name:
		return fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("the module's manifest names it %s, not %s", m.Name, name))
	case m.Role != abi.RoleGuard && m.Role != abi.RoleBuiltin:
		return fail(http.StatusUnprocessableEntity, CodePluginRejected, fmt.Sprintf("plugin %s has role %q: a tenant plugin is a guard or a builtin", name, m.Role))
	}
	if m.Role == abi.RoleBuiltin {
		// No first-party builtin's name or prefix, and a full load as a
		// builtin for the tenant (schemas, limits), before it is kept.
		if err := catalog.CheckNames(m); err != nil {
			return fail(http.StatusUnprocessableEntity, CodePluginRejected, fmt.Sprintf("builtin %s: %v", name, err))
		}
		manifest, _ := json.Marshal(m)
		in, err := catalog.Install(context.WithoutCancel(r.Context()), s.opt.Host, catalog.Package{Name: name, Wasm: req.Module, Manifest: manifest, SHA256: digest},
			catalog.Grant{Tenant: tenant, Capabilities: m.Capabilities, Limits: s.opt.Policy.Limits})
		if err != nil {
			return fail(http.StatusUnprocessableEntity, CodePluginRejected, strings.TrimPrefix(err.Error(), "catalog: "))
		}
		_ = in.Close(context.WithoutCancel(r.Context()))
	}
	if err := s.checkGrant(tenant, name, m); err != nil {
		return err
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("server: plugin %s: %w", name, err)
	}
	grant := make([]string, 0, len(m.Capabilities))
	for _, c := range m.Capabilities {
		grant = append(grant, string(c))
	}
	if m.Role == abi.RoleBuiltin {
		// A builtin runs as installed (no attachment gives it a config):
		// the kit's checks run now, every tool it declares probed.
		rec := store.PluginRecord{Tenant: tenant, Name: name, Version: m.Version, Digest: digest, Grant: grant}
		if kp := s.kitProblems(r.Context(), "", rec, req.Module, nil); len(kp) > 0 {
			return fail(http.StatusUnprocessableEntity, CodePluginRejected, fmt.Sprintf("builtin %s: %d problem(s): %s", name, len(kp), strings.Join(kp, "; ")))
		}
	}
	added, err := reg.PutPlugin(r.Context(), store.PluginRecord{Tenant: tenant, Name: name, Version: m.Version, Digest: digest,
		Role: string(m.Role), Manifest: manifest, Grant: grant, Module: req.Module, InstalledBy: by, Installed: s.opt.Now()})
	switch {
	case errors.Is(err, store.ErrConflict):
		return fail(http.StatusConflict, CodeVersionExists,
			fmt.Sprintf("%s@%s is installed with another module (%v); give the new module a new version", name, m.Version, strings.TrimPrefix(err.Error(), "store: ")))
	case err != nil:
		s.log.Error("plugin not stored", "tenant", tenant, "plugin", name, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the plugin store failed")
	}
	s.log.Info("tenant plugin installed", "tenant", tenant, "plugin", name, "version", m.Version, "digest", digest, "by", by, "new", added)
	info, err := s.pluginInfo(r.Context(), tenant, name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	writeJSON(w, status, info)
	return nil
}

// checkGrant refuses a manifest that asks for a capability the tenant's
// allow-list (Options.Capabilities) does not hold.
func (s *Server) checkGrant(tenant, name string, m abi.Manifest) error {
	allowed := s.opt.Capabilities[tenant]
	var over []string
	for _, c := range m.Capabilities {
		if !slices.Contains(allowed, c) {
			over = append(over, string(c))
		}
	}
	if len(over) == 0 {
		return nil
	}
	excess := make([]abi.Capability, len(over))
	for i, c := range over {
		excess[i] = abi.Capability(c)
	}
	return capabilityDenied(tenant, name, excess, allowed)
}

// capabilityDenied is the refusal of a module asking for capabilities
// beyond the tenant's allow-list, naming both.
func capabilityDenied(tenant, name string, excess, allowed []abi.Capability) error {
	over := make([]string, len(excess))
	for i, c := range excess {
		over[i] = string(c)
	}
	may := "none"
	if len(allowed) > 0 {
		names := make([]string, len(allowed))
		for i, c := range allowed {
			names[i] = string(c)
		}
		may = strings.Join(names, ", ")
	}
	return fail(http.StatusUnprocessableEntity, CodeCapabilityDenied,
		fmt.Sprintf("plugin %s asks for capabilities the tenant may not have: %s (tenant %s may have: %s)", name, strings.Join(over, ", "), tenant, may))
}

// checkReactor refuses what is not a wasm module, and a module built as a
// command (it exports _start, not _initialize) with the build to use.
func checkReactor(b []byte) error {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return fail(http.StatusBadRequest, CodeNotWasm, "the module is not WebAssembly (it does not start with \\0asm)")
	}
	exports, ok := wasmExports(b)
	if ok && slices.Contains(exports, "_start") && !slices.Contains(exports, "_initialize") {
		return fail(http.StatusUnprocessableEntity, CodePluginRejected,
			"the module is built as a command (it exports _start); build it as a reactor: "+commandBuild)
	}
	return nil
}

// wasmExports lists the export names of a wasm module's export section;
// false when the module cannot be read that far (the host then refuses it).
func wasmExports(b []byte) ([]string, bool) {
	p := 8
	for p < len(b) {
		id := b[p]
		p++
		size, n := binary.Uvarint(b[p:])
		if n <= 0 || size > uint64(len(b)-p-n) {
			return nil, false
		}
		p += n
		sec := b[p : p+int(size)]
		p += int(size)
		if id != 7 {
			continue
		}
		count, n := binary.Uvarint(sec)
		if n <= 0 || count > uint64(len(sec)) {
			return nil, false
		}
		q := n
		var out []string
		for range count {
			l, n := binary.Uvarint(sec[q:])
			if n <= 0 || l > uint64(len(sec)-q-n) {
				return nil, false
			}
			q += n
			out = append(out, string(sec[q:q+int(l)]))
			q += int(l)
			if q >= len(sec) {
				return nil, false
			}
			q++ // kind
			if _, n = binary.Uvarint(sec[q:]); n <= 0 {
				return nil, false
			}
			q += n
		}
		return out, true
	}
	return nil, true
}

// attachments maps each of the tenant's plugin refs (name@version and
// sha256:digest) to the ACTIVE skills attaching it.
func (s *Server) attachments(ctx context.Context, tenant string) (map[string][]string, error) {
	skills, err := s.skillViews(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, sk := range skills {
		// An INACTIVE skill is not in effect: it attaches nothing (an
		// upload making it ACTIVE again checks its refs).
		if sk.contract == nil || sk.Status != skillActive {
			continue
		}
		for _, g := range sk.contract.Guards {
			if !slices.Contains(out[g.Ref], sk.Key) {
				out[g.Ref] = append(out[g.Ref], sk.Key)
			}
		}
	}
	return out, nil
}

func (s *Server) pluginInfo(ctx context.Context, tenant, name string) (PluginInfo, error) {
	list, err := s.pluginInfos(ctx, tenant)
	if err != nil {
		return PluginInfo{}, err
	}
	for _, p := range list {
		if p.Name == name {
			return p, nil
		}
	}
	return PluginInfo{}, fail(http.StatusNotFound, CodePluginNotFound, "no plugin "+name)
}

func (s *Server) pluginInfos(ctx context.Context, tenant string) ([]PluginInfo, error) {
	reg, err := s.registryOf()
	if err != nil {
		return nil, err
	}
	recs, err := reg.Plugins(ctx, tenant)
	if err != nil {
		s.log.Error("plugins not read", "tenant", tenant, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the plugin store failed")
	}
	att, err := s.attachments(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := []PluginInfo{}
	for _, rec := range recs {
		if len(out) == 0 || out[len(out)-1].Name != rec.Name {
			out = append(out, PluginInfo{Name: rec.Name, Tenant: tenant, Versions: []PluginVersion{}})
		}
		ref := rec.Name + "@" + rec.Version
		by := slices.Clone(att[ref])
		for _, k := range att["sha256:"+rec.Digest] {
			if !slices.Contains(by, k) {
				by = append(by, k)
			}
		}
		sort.Strings(by)
		v := PluginVersion{Version: rec.Version, Ref: ref, Digest: rec.Digest, Role: rec.Role, Capabilities: rec.Grant,
			Manifest: rec.Manifest, InstalledBy: rec.InstalledBy, Installed: rec.Installed, Status: "installed", AttachedBy: by}
		if v.Capabilities == nil {
			v.Capabilities = []string{}
		}
		if v.AttachedBy == nil {
			v.AttachedBy = []string{}
		}
		if len(by) > 0 {
			v.Status = "attached"
		}
		p := &out[len(out)-1]
		p.Versions = append(p.Versions, v)
	}
	return out, nil
}

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request, tenant, _ string) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	list, err := s.pluginInfos(r.Context(), tenant)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": list})
	return nil
}

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request, tenant, _ string) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	p, err := s.pluginInfo(r.Context(), tenant, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// deletePlugin removes every version of a tenant's plugin, unless a skill
// in effect still attaches one (409 naming them), and answers what it was.
func (s *Server) deletePlugin(w http.ResponseWriter, r *http.Request, tenant, by string) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	p, err := s.pluginInfo(r.Context(), tenant, name)
	if err != nil {
		return err
	}
	var attached []string
	for _, v := range p.Versions {
		for _, k := range v.AttachedBy {
			if !slices.Contains(attached, k) {
				attached = append(attached, k)
			}
		}
	}
	if len(attached) > 0 {
		sort.Strings(attached)
		return fail(http.StatusConflict, CodePluginAttached,
			fmt.Sprintf("plugin %s is attached by skills %s: detach it from them first", name, strings.Join(attached, ", ")))
	}
	reg, _ := s.registryOf()
	switch err := reg.DeletePlugin(r.Context(), tenant, name); {
	case errors.Is(err, store.ErrNotFound):
		return fail(http.StatusNotFound, CodePluginNotFound, "no plugin "+name)
	case err != nil:
		s.log.Error("plugin not deleted", "tenant", tenant, "plugin", name, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the plugin store failed")
	}
	s.log.Info("tenant plugin deleted", "tenant", tenant, "plugin", name, "by", by)
	writeJSON(w, http.StatusOK, p)
	return nil
}

// resolveRef finds the plugin version a guard ref names among a tenant's
// records.
func resolveRef(recs []store.PluginRecord, ref string) (store.PluginRecord, bool) {
	for _, rec := range recs {
		if ref == rec.Name+"@"+rec.Version || ref == "sha256:"+rec.Digest {
			return rec, true
		}
	}
	return store.PluginRecord{}, false
}

// refProblems lists what keeps a skill's tenant guards from loading for
// the tenant: a ref its registry does not hold, a module that is not a
// guard or does not run in the phase it is attached to, or one asking for
// a capability the tenant may no longer have.
func (s *Server) refProblems(tenant string, c *contract.Contract, recs []store.PluginRecord) []string {
	var out []string
	if c == nil {
		return nil
	}
	for i, g := range c.Guards {
		at := fmt.Sprintf("guards[%d]", i)
		rec, ok := resolveRef(recs, g.Ref)
		if !ok {
			out = append(out, fmt.Sprintf("%s: ref %s is not installed for tenant %s (PUT /v1/plugins/{name})", at, g.Ref, tenant))
			continue
		}
		var m abi.Manifest
		if err := json.Unmarshal(rec.Manifest, &m); err != nil {
			out = append(out, fmt.Sprintf("%s: ref %s: manifest unreadable: %v", at, g.Ref, err))
			continue
		}
		if m.Role != abi.RoleGuard {
			out = append(out, fmt.Sprintf("%s: ref %s is a %s, not a guard", at, g.Ref, m.Role))
			continue
		}
		if !m.RunsIn(abi.Phase(g.Phase)) {
			out = append(out, fmt.Sprintf("%s: ref %s does not run in phase %s (it runs in %v)", at, g.Ref, g.Phase, m.Phases))
		}
		if err := s.checkGrant(tenant, rec.Name, m); err != nil {
			var ae *apiError
			errors.As(err, &ae)
			out = append(out, fmt.Sprintf("%s: ref %s: %s", at, g.Ref, ae.message))
		}
	}
	return out
}

// placements loads a skill's tenant guards from the tenant's registry
// (chain.Registry, each module fetched from the store once by digest) and
// places them. A ref that does not resolve is an error: the skill does not
// load.
func (s *Server) placements(ctx context.Context, tenant string, c *contract.Contract, recs []store.PluginRecord) ([]chain.Placement, error) {
	if c == nil || len(c.Guards) == 0 {
		return nil, nil
	}
	if p := s.refProblems(tenant, c, recs); len(p) > 0 {
		return nil, fmt.Errorf("server: %s: %w", strings.Join(p, "; "), chain.ErrUnknownGuard)
	}
	if s.opt.Host == nil {
		return nil, fmt.Errorf("%w: tenant guards without a plugin host", ErrConfig)
	}
	tr := s.tenantRegistry()
	for _, g := range c.Guards {
		rec, _ := resolveRef(recs, g.Ref)
		if err := tr.ensure(ctx, s.registry(), rec); err != nil {
			return nil, err
		}
	}
	// Each guard loads once per (tenant, digest, config) and carries its
	// attachment's failure policy, which the chain applies.
	out, err := tr.reg.Placements(ctx, tenant, c.Guards)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return out, nil
}

// configProblems lists the guards whose config their module's
// configSchema refuses (rule W5), loading the modules as placements does.
func (s *Server) configProblems(ctx context.Context, tenant, key string, c *contract.Contract, recs []store.PluginRecord) []string {
	if c == nil || len(c.Guards) == 0 || s.opt.Host == nil {
		return nil
	}
	tr := s.tenantRegistry()
	for _, g := range c.Guards {
		rec, _ := resolveRef(recs, g.Ref)
		if err := tr.ensure(ctx, s.registry(), rec); err != nil {
			return []string{err.Error()}
		}
	}
	var out []string
	for _, p := range tr.reg.Check(tenant, key, c.Guards) {
		out = append(out, fmt.Sprintf("skill_contract.%s: rule %s: %s", p.Path, p.Rule, p.Message()))
	}
	return out
}

// ensure makes the registry hold a tenant's module as the store has it
// now (by name@version and digest), read from the store once per digest
// and granted what it was granted at install.
func (tr *tenantRegistry) ensure(ctx context.Context, reg store.Registry, rec store.PluginRecord) error {
	ref := rec.Name + "@" + rec.Version
	if _, d, ok := tr.reg.Resolve(rec.Tenant, ref); ok && d == rec.Digest {
		return nil
	}
	b, err := reg.PluginModule(ctx, rec.Tenant, rec.Digest)
	if err != nil {
		return fmt.Errorf("server: tenant guard %s: %w", ref, err)
	}
	grants := make([]abi.Capability, len(rec.Grant))
	for i, c := range rec.Grant {
		grants[i] = abi.Capability(c)
	}
	if _, err := tr.reg.Install(ctx, rec.Tenant, host.Source{Name: ref, Bytes: b, SHA256: rec.Digest}, grants...); err != nil {
		return fmt.Errorf("server: tenant guard %s: %w", ref, err)
	}
	return nil
}

var tenantRegistryMu sync.Mutex

func (s *Server) tenantRegistry() *tenantRegistry {
	tenantRegistryMu.Lock()
	defer tenantRegistryMu.Unlock()
	if s.treg == nil {
		pol := s.opt.Policy
		pol.Capabilities = nil // a tenant module gets its own grant, no more
		s.treg = &tenantRegistry{reg: &chain.Registry{Host: s.opt.Host, Policy: pol}}
	}
	return s.treg
}

// posGuard stands for a tenant guard where only its place in the chain
// is checked (an upload's positions); it is never called.
type posGuard struct{ name string }

func (g posGuard) Name() string { return g.name }

func (g posGuard) Guard(context.Context, string, *abi.Request) abi.Verdict {
	panic("server: a position stand-in was called")
}

// tenantBuiltins loads the tenant's builtin modules, the newest version of
// each, as builtins of its nodes (§12: always offered, not in toolNames),
// each module read from the store and loaded once per digest with the
// grant it was installed with. One that does not load, or offers a tool
// another of the tenant's builtins offers, is left out through skip.
func (s *Server) tenantBuiltins(ctx context.Context, tenant string, recs []store.PluginRecord, skip func(name, reason string)) []loop.Builtin {
	if s.opt.Host == nil {
		return nil
	}
	newest := map[string]store.PluginRecord{}
	var names []string
	for _, rec := range recs {
		if rec.Role != string(abi.RoleBuiltin) {
			continue
		}
		if _, ok := newest[rec.Name]; !ok {
			names = append(names, rec.Name)
		}
		newest[rec.Name] = rec // records come in install order
	}
	sort.Strings(names)
	tr := s.tenantRegistry()
	var out []loop.Builtin
	offered := map[string]string{}
	for _, n := range names {
		rec := newest[n]
		ref := rec.Name + "@" + rec.Version
		in, err := tr.builtin(ctx, s, rec)
		if err != nil {
			skip(ref, err.Error())
			continue
		}
		clash := ""
		for _, t := range in.Manifest().Tools {
			if other, ok := offered[t.Name]; ok {
				clash = fmt.Sprintf("its tool %s is %s's", t.Name, other)
			}
		}
		if clash != "" {
			skip(ref, clash)
			continue
		}
		for _, t := range in.Manifest().Tools {
			offered[t.Name] = ref
		}
		out = append(out, in)
	}
	return out
}

// builtin loads (once per tenant and digest) a tenant's builtin module.
func (tr *tenantRegistry) builtin(ctx context.Context, s *Server, rec store.PluginRecord) (*catalog.Installed, error) {
	key := rec.Tenant + "|" + rec.Digest
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if in, ok := tr.builtins[key]; ok {
		return in, nil
	}
	b, err := s.registry().PluginModule(ctx, rec.Tenant, rec.Digest)
	if err != nil {
		return nil, fmt.Errorf("server: builtin %s@%s: %w", rec.Name, rec.Version, err)
	}
	grants := make([]abi.Capability, len(rec.Grant))
	for i, c := range rec.Grant {
		grants[i] = abi.Capability(c)
	}
	if err := s.checkGrant(rec.Tenant, rec.Name, abi.Manifest{Capabilities: grants}); err != nil {
		var ae *apiError
		errors.As(err, &ae)
		return nil, errors.New(ae.message)
	}
	in, err := catalog.Install(ctx, s.opt.Host, catalog.Package{Name: rec.Name + "@" + rec.Version, Wasm: b, Manifest: rec.Manifest, SHA256: rec.Digest},
		catalog.Grant{Tenant: rec.Tenant, Capabilities: grants, Limits: s.opt.Policy.Limits})
	if err != nil {
		return nil, fmt.Errorf("server: builtin %s@%s: %w", rec.Name, rec.Version, err)
	}
	if tr.builtins == nil {
		tr.builtins = map[string]*catalog.Installed{}
	}
	tr.builtins[key] = in
	return in, nil
}
