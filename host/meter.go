package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

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
// instructions (or bytes of a bulk memory op), so the guest comes back to
// the host every few dozen microseconds at most (docs/RATIONALE.md,
// "Metering"). It is at least the largest charge of a loop check, so that
// a loop asks the host at most once per quantum.
const meterQuantum = meter.Quantum

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
	if st := stateFrom(ctx); st != nil {
		stack[0] = st.quantum(time.Since(meterEpoch))
	}
}

// meterEpoch is what refills are timed from: time.Since reads only the
// monotonic clock, where time.Now reads the wall clock as well, and a Go
// guest's call refills thousands of times.
var meterEpoch = time.Now()

// Refills that come fast get a larger quantum. The charge is an upper
// bound that Go guests overshoot many times over (a pass of a large
// function's dispatch loop is charged the whole function), so in their
// usual code a quantum lasts well under a microsecond and a guard call
// asked for fuel thousands of times. A refill that comes within
// quickRefill of the call's previous one hands out twice the last
// quantum, up to maxQuantum; a slower one hands out meterQuantum again.
// A tight loop, for which meterQuantum lasts about 0.4 ms, stays at it, so
// a stop or a collection still waits about one quantum of it; only the
// first quantum after fast code can be up to maxQuantum (twice as long,
// about 0.8 ms, still under the collection's 1 ms bound) before the next
// refill sees the slowdown.
const (
	quickRefill = 20 * time.Microsecond
	maxQuantum  = 2 * meterQuantum
)

// quantum is the fuel of the call's next refill at now (since meterEpoch).
func (st *callState) quantum(now time.Duration) uint64 {
	q := uint64(meterQuantum)
	if st.lastQuantum != 0 && now-st.lastRefill < quickRefill {
		q = min(2*st.lastQuantum, maxQuantum)
	}
	st.lastRefill, st.lastQuantum = now, q
	return q
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

// rewriteVersion names the output of the rewrites, so that no stale copy
// on disk is used: bump meter.Version or callStackVersion whenever either
// rewriter changes what it writes (TestRewriteGolden fails until then).
const rewriteVersion = meter.Version + callStackVersion + dataMergeVersion

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
		if b, ok := readRewrite(filepath.Join(dir, k.file()), h.maxRewriteFile()); ok {
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

// maxRewriteFile caps what readRewrite reads: a rewrite is a little larger
// than its module, which the host caps.
func (h *Host) maxRewriteFile() int64 { return 4*int64(h.opts.MaxModuleBytes) + sha256.Size }

// A rewrite on disk is the sha256 of its file name and the module, then
// the module: a torn or damaged file, or one copied under another name,
// reads as absent, as does one larger than max.
func readRewrite(path string, max int64) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(b)) > max || len(b) < sha256.Size {
		return nil, false
	}
	sum := rewriteSum(filepath.Base(path), b[sha256.Size:])
	if !bytes.Equal(sum[:], b[:sha256.Size]) {
		return nil, false
	}
	return b[sha256.Size:], true
}

// rewriteSum ties a rewrite's contents to the key its file is named by.
func rewriteSum(name string, b []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(name))))
	h.Write([]byte(name))
	h.Write(b)
	return [sha256.Size]byte(h.Sum(nil))
}

func writeRewrite(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return err
	}
	sum := rewriteSum(name, b)
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
