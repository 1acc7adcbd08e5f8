package host

import (
	"context"
	"fmt"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// keepIdleModules is how many compiled modules no plugin uses any more the
// host keeps, so that rolling back, or forward again, to a recent
// generation compiles nothing.
const keepIdleModules = 16

// moduleKey names a compiled module: the memory class it was compiled for
// and the module's digest.
type moduleKey struct {
	pages  uint32
	digest string
}

// sharedModule is a compiled module and the plugins using it.
type sharedModule struct {
	cm   wazero.CompiledModule
	refs int
	idle uint64 // when refs fell to 0, in release order
}

// compile returns the module compiled for the class, compiling it only if
// the host holds no compilation of the same digest; release it with
// releaseModule. Decoding and validating a module of several MiB is most of
// a swap's CPU, even when its code comes from the compilation cache.
func (h *Host) compile(ctx context.Context, cls *class, digest string, b []byte) (wazero.CompiledModule, moduleKey, error) {
	k := moduleKey{cls.pages, digest}
	h.mu.Lock()
	for {
		if m := h.modules[k]; m != nil {
			m.refs++
			h.mu.Unlock()
			return m.cm, k, nil
		}
		busy := h.compiling[k]
		if busy == nil {
			break
		}
		// The same module is being compiled (another plugin of it):
		// wait for that compilation rather than compile it twice.
		h.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, k, ctx.Err()
		}
		h.mu.Lock()
	}
	if h.compiling == nil {
		h.compiling = map[moduleKey]chan struct{}{}
	}
	done := make(chan struct{})
	h.compiling[k] = done
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.compiling, k)
		h.mu.Unlock()
		close(done)
	}()
	// A module the rewriters refuse never reaches wazero: Load and
	// Precompile refuse it earlier with their own message, and wazero's
	// decoder is not safe on every input the rewriters refuse.
	inst, err := boundCallStack(b, callStackBudget(cls.pages))
	if err != nil {
		return nil, k, err
	}
	b = inst
	cctx := ctx
	if h.opts.Profile != nil {
		cctx = experimental.WithFunctionListenerFactory(ctx, h.opts.Profile)
	}
	cm, err := cls.rt.CompileModule(cctx, b)
	if err != nil {
		return nil, k, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = cm.Close(ctx)
		return nil, k, fmt.Errorf("host: compile: %w", ErrClosed)
	}
	if m := h.modules[k]; m != nil {
		// Compiled twice at once: keep the first.
		m.refs++
		h.mu.Unlock()
		_ = cm.Close(ctx)
		return m.cm, k, nil
	}
	h.modules[k] = &sharedModule{cm: cm, refs: 1}
	h.mu.Unlock()
	h.markCompiled(digest, cls.pages)
	return cm, k, nil
}

// releaseModule gives back a module compile returned. The last user's
// release keeps it among the idle modules; the oldest idle ones beyond
// keepIdleModules are closed.
func (h *Host) releaseModule(ctx context.Context, k moduleKey) {
	h.mu.Lock()
	m := h.modules[k]
	if m == nil || h.closed {
		h.mu.Unlock()
		return
	}
	if m.refs--; m.refs > 0 {
		h.mu.Unlock()
		return
	}
	h.idleSeq++
	m.idle = h.idleSeq
	var idle []moduleKey
	for key, sm := range h.modules {
		if sm.refs == 0 {
			idle = append(idle, key)
		}
	}
	var evict []wazero.CompiledModule
	if len(idle) > keepIdleModules {
		sort.Slice(idle, func(i, j int) bool { return h.modules[idle[i]].idle < h.modules[idle[j]].idle })
		for _, key := range idle[:len(idle)-keepIdleModules] {
			evict = append(evict, h.modules[key].cm)
			delete(h.modules, key)
		}
	}
	h.mu.Unlock()
	for _, cm := range evict {
		_ = cm.Close(context.WithoutCancel(ctx))
	}
}

// compiledModules reports how many compiled modules the host holds and how
// many of them no plugin uses (for tests).
func (h *Host) compiledModules() (all, idle int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.modules {
		all++
		if m.refs == 0 {
			idle++
		}
	}
	return all, idle
}

// Precompile compiles a module the way Load would for pol, and keeps the
// compilation for the Load that follows: several modules can be compiled
// at once this way, which Load, serial per slot, cannot. Extism modules
// and a module that asks for a tighter memory limit than pol are compiled
// again by Load.
func (h *Host) Precompile(ctx context.Context, src Source, pol Policy) error {
	pol = pol.withDefaults()
	if len(src.Bytes) > h.opts.MaxModuleBytes {
		return fmt.Errorf("host: precompile %s: %d bytes over %d: %w", src.Name, len(src.Bytes), h.opts.MaxModuleBytes, ErrModuleTooLarge)
	}
	cls, err := h.class(ctx, uint32(pol.Limits.MemoryPages))
	if err != nil {
		return err
	}
	// As in Load: the plugin a module is bound to is no part of what
	// compiles, so every plugin of one module shares its compilation.
	module, _, _ := splitSelection(src.Bytes)
	digest := Digest(module)
	if err := h.offload(ctx, src.Name, digest, module, cls.pages); err != nil {
		return err
	}
	// As in Load: a module the rewriters refuse never reaches wazero.
	if err := h.warmRewrite(module, cls.pages); err != nil {
		return fmt.Errorf("host: compile %s: %w: %w", src.Name, ErrCompile, err)
	}
	_, key, err := h.compile(ctx, cls, digest, module)
	if err != nil {
		return fmt.Errorf("host: compile %s: %w: %w", src.Name, ErrCompile, err)
	}
	h.releaseModule(ctx, key)
	return nil
}
