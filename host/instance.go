package host

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// engine makes instances of one compiled module.
type engine interface {
	kind() string
	newInstance(ctx context.Context, box *sandbox) (instanceImpl, error)
	close(ctx context.Context) error
}

// instanceImpl is one live guest. It is used by one goroutine at a time.
type instanceImpl interface {
	abiVersion(ctx context.Context) (uint32, error)
	manifest(ctx context.Context) ([]byte, error)
	// handle decides one call on req. The last tail bytes of req before
	// its closing brace are its response member (`,"response":…`, 0 when
	// it has none), which a lean guest (abi.ExportLeanInput) is not given.
	handle(ctx context.Context, req []byte, tail int) error
	stderr() string
	close(ctx context.Context)
}

// instance is a pooled guest with its call state.
type instance struct {
	impl  instanceImpl
	st    *callState
	box   *sandbox
	calls int
	// tenant is the tenant whose calls the instance has served ("" until
	// its first, and for the probe's).
	tenant string

	// p is the instance's plugin, pool the tenant's pool it belongs to
	// (nil while it is the plugin's spare). elem is its place on the
	// host's idle list while it is idle (nil while busy), idleSince when
	// it went idle, and bytes the linear memory the instance budget
	// counts for it; all three are the budget's, under its lock.
	p         *Plugin
	pool      *pool
	elem      *list.Element
	idleSince time.Time
	bytes     int64
}

// memoryBytes is the linear memory inst holds now.
func (inst *instance) memoryBytes() int64 {
	if ms, ok := inst.impl.(memorySizer); ok {
		return ms.memoryBytes()
	}
	return 0
}

// sandbox holds the per-instance stand-ins for clocks and randomness. The
// grants are set once the manifest is known; until then (during _initialize
// of the pre-warm instance) nothing is granted.
type sandbox struct {
	h         *Host
	clock     bool
	random    bool
	fakeWall  int64
	fakeNano  int64
	seed      uint64
	stderrBuf limitedBuffer
}

func newSandbox(h *Host) *sandbox { return &sandbox{h: h, fakeWall: fakeEpoch} }

func (b *sandbox) walltime() (int64, int32) {
	if b.clock {
		t := b.h.opts.Clock()
		return t.Unix(), int32(t.Nanosecond())
	}
	b.fakeWall += 1e6
	return b.fakeWall / 1e9, int32(b.fakeWall % 1e9)
}

func (b *sandbox) nanotime() int64 {
	if b.clock {
		return b.h.opts.Clock().UnixNano()
	}
	b.fakeNano += 1e6
	return b.fakeNano
}

// Read implements io.Reader for WASI random_get.
func (b *sandbox) Read(p []byte) (int, error) {
	if b.random {
		return b.h.opts.Rand.Read(p)
	}
	deterministic(&b.seed, p)
	return len(p), nil
}

func (b *sandbox) moduleConfig(start bool) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdout(&b.stderrBuf).
		WithStderr(&b.stderrBuf).
		WithWalltime(b.walltime, 1000).
		WithNanotime(b.nanotime, 1000).
		WithRandSource(b).
		WithStartFunctions()
	if start {
		cfg = cfg.WithStartFunctions(exportInitialize)
	}
	return cfg
}

// limitedBuffer keeps the first 4 KiB a guest writes to stdout/stderr.
type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const stderrLimit = 4 << 10

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	if room := stderrLimit - len(l.buf); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		l.buf = append(l.buf, p[:room]...)
	}
	l.mu.Unlock()
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// --- direct ABI instances ---

func (e *directEngine) kind() string { return "direct" }

func (e *directEngine) close(ctx context.Context) error {
	e.cls.host.releaseModule(ctx, e.key)
	return nil
}

func (e *directEngine) newInstance(ctx context.Context, box *sandbox) (instanceImpl, error) {
	_, hasInit := e.compiled.ExportedFunctions()[exportInitialize]
	if memoryAllocator != nil {
		ctx = experimental.WithMemoryAllocator(ctx, memoryAllocator)
	}
	mod, err := e.cls.rt.InstantiateModule(ctx, e.compiled, box.moduleConfig(hasInit))
	if err != nil {
		return nil, err
	}
	if e.selects != "" {
		if err := selectPlugin(ctx, mod, e.selects); err != nil {
			_ = mod.Close(ctx)
			if errors.Is(err, ErrSelect) {
				return nil, selectError{err}
			}
			return nil, err
		}
	}
	return &directInstance{
		mod:      mod,
		depth:    mod.ExportedGlobal(stackGlobalExport),
		budget:   callStackBudget(e.cls.pages),
		ver:      mod.ExportedFunction(exportABIVersion),
		man:      mod.ExportedFunction(exportManifest),
		input:    mod.ExportedFunction(exportInput),
		handleFn: mod.ExportedFunction(exportHandle),
		lean:     leanInput(mod),
		box:      box,
	}, nil
}

type directInstance struct {
	mod                       api.Module
	ver, man, input, handleFn api.Function
	stack                     [2]uint64
	box                       *sandbox
	// depth is the call-stack counter of the instrumented module (see
	// boundCallStack), budget its limit.
	depth  api.Global
	budget uint32
	// lean says the guest takes its request without the response member
	// (abi.ExportLeanInput).
	lean bool
}

// responseMember opens the response member a lean guest is not given.
var responseMember = []byte(`,"response":`)

// leanInput says whether mod exports abi.ExportLeanInput as () -> ().
func leanInput(mod api.Module) bool {
	f := mod.ExportedFunction(abi.ExportLeanInput)
	return f != nil && len(f.Definition().ParamTypes()) == 0 && len(f.Definition().ResultTypes()) == 0
}

func (d *directInstance) abiVersion(ctx context.Context) (uint32, error) {
	r, err := d.ver.Call(ctx)
	if err != nil {
		return 0, err
	}
	return uint32(r[0]), nil
}

func (d *directInstance) manifest(ctx context.Context) ([]byte, error) {
	r, err := d.man.Call(ctx)
	if err != nil {
		return nil, err
	}
	ptr, n := uint32(r[0]>>32), uint32(r[0])
	if n == 0 {
		return nil, nil
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("manifest of %d bytes", n)
	}
	b, ok := d.mod.Memory().Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("manifest pointer %d+%d out of bounds", ptr, n)
	}
	return append([]byte(nil), b...), nil
}

func (d *directInstance) handle(ctx context.Context, req []byte, tail int) error {
	n := len(req)
	if d.lean && tail > 0 && tail < n && bytes.HasPrefix(req[n-1-tail:], responseMember) {
		n -= tail // the member goes; the closing brace moves up
	}
	d.stack[0] = uint64(n)
	if err := d.input.CallWithStack(ctx, d.stack[:]); err != nil {
		return err
	}
	ptr := uint32(d.stack[0])
	mem := d.mod.Memory()
	ok := mem.Write(ptr, req[:n])
	if n < len(req) {
		ok = mem.Write(ptr, req[:n-1]) && mem.WriteByte(ptr+uint32(n-1), req[len(req)-1])
	}
	if !ok {
		return fmt.Errorf("input buffer %d+%d out of bounds", ptr, n)
	}
	d.stack[0] = uint64(n)
	err := d.handleFn.CallWithStack(ctx, d.stack[:])
	if err != nil && d.depth != nil && uint32(d.depth.Get()) > d.budget {
		err = fmt.Errorf("%s (%d bytes): %w", stackExhausted, d.budget, err)
	}
	return err
}

func (d *directInstance) memoryBytes() int64 { return int64(d.mod.Memory().Size()) }

func (d *directInstance) stderr() string { return d.box.stderrBuf.String() }

func (d *directInstance) close(ctx context.Context) { _ = d.mod.Close(ctx) }

// exitCode returns the guest's exit code if err is a wasm exit.
func exitCode(err error) (uint32, bool) {
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, false
}
