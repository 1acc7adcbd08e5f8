package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero"
)

// Source is a plugin module to load.
type Source struct {
	// Name identifies the module in errors and logs (a path or a ref).
	Name string
	// Bytes is the module (.wasm).
	Bytes []byte
	// SHA256 optionally pins the module's digest (hex, "sha256:" prefix
	// allowed); a module with another digest is refused.
	SHA256 string
}

// ReadSource reads a module file, with an optional digest pin.
func ReadSource(path, pin string) (Source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Source{}, fmt.Errorf("host: read %s: %w", path, err)
	}
	return Source{Name: path, Bytes: b, SHA256: pin}, nil
}

// Digest returns the hex sha256 of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Load verifies, compiles and pre-warms a plugin: digest pin, module shape
// (exports, signatures, imports), ABI version, manifest, limits and config
// are all checked before the first call. A plugin whose start traps or runs
// past Policy.LoadTimeout fails here.
func (h *Host) Load(ctx context.Context, src Source, pol Policy) (*Plugin, error) {
	pol = pol.withDefaults()
	name := src.Name
	if name == "" {
		name = "module"
	}
	if len(src.Bytes) > h.opts.MaxModuleBytes {
		return nil, fmt.Errorf("host: load %s: %d bytes over %d: %w", name, len(src.Bytes), h.opts.MaxModuleBytes, ErrModuleTooLarge)
	}
	digest := Digest(src.Bytes)
	if pin := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(src.SHA256)), "sha256:"); pin != "" && pin != digest {
		return nil, fmt.Errorf("host: load %s: sha256 %s, pinned %s: %w", name, digest, pin, ErrDigestMismatch)
	}
	// A module bound to one of its plugins (SelectPlugin) compiles without
	// the binding, once for all its plugins; digest names both.
	module, selects, bound := splitSelection(src.Bytes)
	if bound {
		if err := checkSelectName(selects); err != nil {
			return nil, fmt.Errorf("host: load %s: %w", name, err)
		}
	}
	modDigest := Digest(module)
	if err := validateLimits(pol.Limits); err != nil {
		return nil, fmt.Errorf("host: load %s: policy: %w", name, err)
	}
	cls, err := h.class(ctx, uint32(pol.Limits.MemoryPages))
	if err != nil {
		return nil, err
	}
	if err := h.offload(ctx, name, modDigest, module, cls.pages); err != nil {
		return nil, err
	}
	if err := h.warmRewrite(module, cls.pages); err != nil {
		return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
	}
	cm, key, err := h.compile(ctx, cls, modDigest, module)
	if err != nil {
		return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
	}
	if err := checkReactor(cm); err != nil {
		h.releaseModule(ctx, key)
		return nil, fmt.Errorf("host: load %s: %w", name, err)
	}
	if importsModule(cm, extismEnvModule) {
		h.releaseModule(ctx, key)
		if bound {
			return nil, fmt.Errorf("host: load %s: an extism module serves one plugin, and section %s names %q: %w", name, abi.SelectSection, selects, ErrSelect)
		}
		return h.loadExtism(ctx, name, digest, src.Bytes, pol)
	}
	if err := checkDirectModule(cm); err != nil {
		h.releaseModule(ctx, key)
		return nil, fmt.Errorf("host: load %s: %w", name, err)
	}
	p := &Plugin{host: h, source: name, digest: digest, moduleDigest: modDigest, selects: selects, policy: pol, pools: map[string]*pool{}}
	p.engine = &directEngine{cls: cls, compiled: cm, key: key, selects: selects}
	m, impl, box, err := h.prewarm(ctx, p, name)
	if err != nil {
		h.releaseModule(ctx, key)
		return nil, err
	}
	limits, err := effectiveLimits(m.Limits, pol.Limits)
	if err != nil {
		impl.close(ctx)
		h.releaseModule(ctx, key)
		return nil, fmt.Errorf("host: load %s: %w", name, err)
	}
	if limits.MemoryPages != pol.Limits.MemoryPages {
		// The plugin asked for a tighter memory limit: run it in that class.
		impl.close(ctx)
		h.releaseModule(ctx, key)
		if cls, err = h.class(ctx, uint32(limits.MemoryPages)); err != nil {
			return nil, err
		}
		if err := h.offload(ctx, name, modDigest, module, cls.pages); err != nil {
			return nil, err
		}
		if err := h.warmRewrite(module, cls.pages); err != nil {
			return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
		}
		if cm, key, err = h.compile(ctx, cls, modDigest, module); err != nil {
			return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
		}
		p.engine = &directEngine{cls: cls, compiled: cm, key: key, selects: selects}
		if m, impl, box, err = h.prewarm(ctx, p, name); err != nil {
			h.releaseModule(ctx, key)
			return nil, err
		}
	}
	if err := h.finishLoad(ctx, p, m, limits, impl, box, name); err != nil {
		h.releaseModule(ctx, key)
		return nil, err
	}
	return p, nil
}

// prewarm starts one instance and reads its ABI version and manifest.
func (h *Host) prewarm(ctx context.Context, p *Plugin, name string) (abi.Manifest, instanceImpl, *sandbox, error) {
	lctx, cancel := context.WithTimeout(ctx, p.policy.LoadTimeout)
	defer cancel()
	box := newSandbox(h)
	impl, err := p.engine.newInstance(lctx, box)
	var sel selectError
	if errors.As(err, &sel) {
		return abi.Manifest{}, nil, nil, fmt.Errorf("host: load %s: %w", name, sel.err)
	}
	if err != nil {
		return abi.Manifest{}, nil, nil, fmt.Errorf("host: load %s: start: %w: %s", name, ErrLoad, startFailure(ctx, err, box.stderrBuf.String(), p.policy))
	}
	fail := func(kind error, format string, a ...any) (abi.Manifest, instanceImpl, *sandbox, error) {
		impl.close(ctx)
		return abi.Manifest{}, nil, nil, fmt.Errorf("host: load %s: %w: %s", name, kind, fmt.Sprintf(format, a...))
	}
	ver, err := impl.abiVersion(lctx)
	if err != nil {
		return fail(ErrLoad, "%s: %s", exportABIVersion, startFailure(ctx, err, impl.stderr(), p.policy))
	}
	if ver != abi.Version {
		return fail(ErrABIVersion, "plugin speaks ABI %d, host speaks %d", ver, abi.Version)
	}
	raw, err := impl.manifest(lctx)
	if err != nil {
		return fail(ErrManifest, "%s: %s", exportManifest, startFailure(ctx, err, impl.stderr(), p.policy))
	}
	if len(raw) == 0 {
		if reason := unboundReason(lctx, impl); p.selects == "" && reason != "" {
			return fail(ErrSelect, "it serves several plugins (%s) and is bound to none; bind it to one (host.SelectPlugin)", reason)
		}
		return fail(ErrManifest, "the plugin exports no manifest")
	}
	m, err := abi.ParseManifest(raw)
	if err != nil {
		return fail(ErrManifest, "%v", err)
	}
	if p.selects != "" && m.Name != p.selects {
		return fail(ErrSelect, "plugin %q selected, its manifest names %q: the module ignores the selection", p.selects, m.Name)
	}
	return m, impl, box, nil
}

// finishLoad checks what depends on the manifest and registers the plugin.
func (h *Host) finishLoad(ctx context.Context, p *Plugin, m abi.Manifest, limits abi.Limits, impl instanceImpl, box *sandbox, name string) error {
	if excess := m.Ungranted(p.policy.Capabilities); len(excess) > 0 && !p.policy.grantAsked {
		impl.close(ctx)
		return fmt.Errorf("host: load %s: %w", name, &GrantError{Plugin: m.Name + "@" + m.Version,
			Asked: m.Capabilities, Excess: excess, Granted: slices.Clone(p.policy.Capabilities)})
	}
	if err := checkConfig(m, p.policy.Config); err != nil && !p.policy.verifyOnly {
		impl.close(ctx)
		return fmt.Errorf("host: load %s: %w", name, err)
	}
	p.manifest, p.limits = m, limits
	p.grant = slices.Clone(m.Capabilities)
	p.ref = m.Name + "@" + m.Version
	box.clock = p.granted(abi.CapClock)
	box.random = p.granted(abi.CapRandom)
	spare := &instance{impl: impl, box: box, p: p, st: &callState{plugin: p, rec: abi.NewGrantedRecorder(&p.manifest, p.grant, limits.MaxOutputBytes), box: box}}
	p.noteMemory(spare)
	p.startBytes.Store(spare.memoryBytes())
	h.instances.admit(ctx, spare)
	p.mu.Lock()
	p.spare = spare
	h.instances.idleNow(spare)
	p.mu.Unlock()
	p.live.Add(1)
	p.stats.created.Add(1)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = p.Close(ctx)
		return fmt.Errorf("host: load %s: %w", name, ErrClosed)
	}
	h.plugins[p] = struct{}{}
	h.mu.Unlock()
	return nil
}

func startFailure(ctx context.Context, err error, stderr string, pol Policy) string {
	if ctx.Err() != nil {
		return "canceled by the caller"
	}
	if code, ok := exitCode(err); ok && code >= 0xeffffffe {
		return fmt.Sprintf("did not start within the load deadline of %v", pol.LoadTimeout)
	}
	if strings.Contains(stderr, "out of memory") {
		return fmt.Sprintf("out of memory (limit %d pages)", pol.Limits.MemoryPages)
	}
	code, isExit := exitCode(err)
	return trapDetail(err, stderr, isExit, code)
}

func validateLimits(l abi.Limits) error {
	if l.TimeoutMs < 0 || l.MemoryPages < 0 || l.MaxInputBytes < 0 || l.MaxOutputBytes < 0 {
		return fmt.Errorf("negative limit: %w", ErrLimits)
	}
	if l.MemoryPages > 65536 {
		return fmt.Errorf("memory pages %d over 65536: %w", l.MemoryPages, ErrLimits)
	}
	return nil
}

// effectiveLimits honours what the manifest asks for within the policy's
// caps; asking for more than the cap fails the load.
func effectiveLimits(want, cap abi.Limits) (abi.Limits, error) {
	var errs []error
	pick := func(field string, w, c int) int {
		switch {
		case w == 0:
			return c
		case w > c:
			errs = append(errs, fmt.Errorf("%s %d over the policy's %d: %w", field, w, c, ErrLimits))
			return c
		}
		return w
	}
	out := abi.Limits{
		TimeoutMs:      pick("timeoutMs", want.TimeoutMs, cap.TimeoutMs),
		MemoryPages:    pick("memoryPages", want.MemoryPages, cap.MemoryPages),
		MaxInputBytes:  pick("maxInputBytes", want.MaxInputBytes, cap.MaxInputBytes),
		MaxOutputBytes: pick("maxOutputBytes", want.MaxOutputBytes, cap.MaxOutputBytes),
	}
	return out, errors.Join(errs...)
}

// checkConfig checks the plugin's config against its manifest's schema.
func checkConfig(m abi.Manifest, config json.RawMessage) error {
	if len(config) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(config, &obj); err != nil || obj == nil {
			return fmt.Errorf("config is not a JSON object: %w", ErrConfig)
		}
	}
	return validateConfig(m.ConfigSchema, config)
}

func importsModule(cm wazero.CompiledModule, module string) bool {
	for _, f := range cm.ImportedFunctions() {
		if mod, _, _ := f.Import(); mod == module {
			return true
		}
	}
	return false
}

// Verify checks a module as Load does — digest pin, shape, ABI version,
// manifest, capabilities within Policy.Capabilities, limits, a pre-warmed
// start — except its config, which whoever attaches the plugin supplies
// later. It returns the manifest and the hex sha256, and keeps nothing
// loaded.
func (h *Host) Verify(ctx context.Context, src Source, pol Policy) (abi.Manifest, string, error) {
	pol.verifyOnly = true
	p, err := h.Load(ctx, src, pol)
	if err != nil {
		return abi.Manifest{}, "", err
	}
	m, d := p.Manifest(), p.Digest()
	_ = p.Close(ctx)
	return m, d, nil
}

// warmRewrite makes the instrumented module that compile will ask for
// (boundCallStack) ready: from the memo, from the host's cache directory, or
// rewritten now and kept in both. A module the rewriters refuse is refused
// here, before wazero sees it: wazero v1.12's decoder allocates what a
// vector's count says before reading it (a 20-byte module can ask for
// gigabytes and end the process), and its validator trusts an import's type
// index; the rewriters check both.
func (h *Host) warmRewrite(bin []byte, pages uint32) error {
	_, err := h.instrument(bin, callStackBudget(pages))
	return err
}
