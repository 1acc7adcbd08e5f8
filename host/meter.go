package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/agentwarden/warden/host/internal/meter"
)

// Metering.
//
// Every module is rewritten at load (host/internal/meter) to count down a
// fuel global at each function entry and loop header, and to call
// warden_meter.refill when the fuel runs out. refill is where a guest's call
// ends once its context is done, exactly as a host service ends it
// (stopCall): the call fails with the deadline or cancellation exit code and
// Invoke reports PLUGIN_TIMEOUT. It is also a safepoint: the goroutine
// running the guest returns to Go there, so a garbage collection waits at
// most one quantum for it. This replaces wazero's close-on-context-done,
// which calls back into Go at every loop header (docs/RATIONALE.md).

// meterModule and meterRefillName are the host function metered modules
// import.
const (
	meterModule     = meter.ImportModule
	meterRefillName = meter.ImportName
)

// meterQuantum is the fuel refill hands out: about as many wasm
// instructions of straight-line code, so the guest comes back to the host
// every few dozen microseconds (docs/RATIONALE.md, "Metering").
const meterQuantum = 1 << 16

// metering turns the instrumentation off for benchmarks that measure it;
// closeOnContextDone turns wazero's own check on (for the same benchmarks).
var (
	metering           = true
	closeOnContextDone = false
)

// meterRefill is warden_meter.refill: () -> i64.
func meterRefill(ctx context.Context, stack []uint64) {
	if ctx.Err() != nil {
		stopCall(ctx)
	}
	stack[0] = meterQuantum
}

func instantiateMeterHost(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(meterModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(meterRefill), nil, []api.ValueType{api.ValueTypeI64}).
		Export(meterRefillName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("host: module %s: %w", meterModule, err)
	}
	return nil
}

// extismMeterFunc is warden_meter.refill for extism plugins.
func extismMeterFunc() extism.HostFunction {
	f := extism.NewHostFunctionWithStack(meterRefillName,
		func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) { meterRefill(ctx, stack) },
		nil, []extism.ValueType{extism.ValueTypeI64})
	f.SetNamespace(meterModule)
	return f
}

// runtimeConfig is the wazero configuration of both loaders.
func (h *Host) runtimeConfig(pages uint32) wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().
		WithCloseOnContextDone(closeOnContextDone).
		WithCompilationCache(h.cache).
		WithMemoryLimitPages(pages)
}

// rewriteVersion names the output of the rewrites; change it whenever
// either rewriter changes what it writes, so that no stale copy on disk is
// used.
const rewriteVersion = "m1s1"

// rewriteKey names one instrumented module: the digest of the original and
// what the rewrite depended on.
type rewriteKey struct {
	digest         [32]byte
	budget         uint32
	metered, stack bool
}

func newRewriteKey(bin []byte, budget uint32) rewriteKey {
	return rewriteKey{sha256.Sum256(bin), budget, metering, stackBound}
}

func (k rewriteKey) file() string {
	return fmt.Sprintf("%s-%s-%d-%t-%t.wasm", rewriteVersion, hex.EncodeToString(k.digest[:]), k.budget, k.metered, k.stack)
}

// rewriteMemo keeps instrumented modules by the digest of the original, so
// that loading a module again (a new generation of the same bytes, a
// tighter memory class, a plugin loaded for several tenants) does not
// rewrite it again. It holds at most rewriteMemoBytes, dropping the oldest
// entries first; the instrumentation is a pure function of its key, so
// sharing it between hosts shares nothing else.
type rewriteMemo struct {
	mu    sync.Mutex
	m     map[rewriteKey][]byte
	order []rewriteKey
	size  int
}

const rewriteMemoBytes = 64 << 20

var rewrites = &rewriteMemo{m: map[rewriteKey][]byte{}}

func (c *rewriteMemo) get(k rewriteKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[k]
	return b, ok
}

func (c *rewriteMemo) put(k rewriteKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok || len(b) > rewriteMemoBytes {
		return
	}
	for c.size+len(b) > rewriteMemoBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.m[old])
		delete(c.m, old)
	}
	c.m[k] = b
	c.order = append(c.order, k)
	c.size += len(b)
}

// instrument returns bin metered and bound in its call stack (see
// boundCallStack), from memory, from the host's cache directory, or
// rewritten now; a rewrite is kept in both.
func (h *Host) instrument(bin []byte, budget uint32) ([]byte, error) {
	k := newRewriteKey(bin, budget)
	if b, ok := rewrites.get(k); ok {
		return b, nil
	}
	dir := ""
	if h.opts.CacheDir != "" {
		dir = filepath.Join(h.opts.CacheDir, "warden-rewrite")
		if b, ok := readRewrite(filepath.Join(dir, k.file())); ok {
			rewrites.put(k, b)
			return b, nil
		}
	}
	b, err := rewriteModule(bin, budget)
	if err != nil {
		return nil, err
	}
	rewrites.put(k, b)
	if dir != "" {
		// A cache that cannot be written only costs the next process a
		// rewrite.
		_ = writeRewrite(dir, k.file(), b)
	}
	return b, nil
}

// A rewrite on disk is the sha256 of the module, then the module: a torn
// or damaged file reads as absent.
func readRewrite(path string) ([]byte, bool) {
	f, err := os.ReadFile(path)
	if err != nil || len(f) < sha256.Size {
		return nil, false
	}
	sum := sha256.Sum256(f[sha256.Size:])
	if !bytes.Equal(sum[:], f[:sha256.Size]) {
		return nil, false
	}
	return f[sha256.Size:], true
}

func writeRewrite(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	_, err = tmp.Write(append(sum[:], b...))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// meterModuleBytes meters bin, or returns it as is when metering is off.
func meterModuleBytes(bin []byte) ([]byte, error) {
	if !metering {
		return bin, nil
	}
	out, err := meter.Instrument(bin)
	if err != nil {
		return nil, fmt.Errorf("host: %w: %w", errStackRewrite, err)
	}
	return out, nil
}
