package host

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// The direct ABI: what a guest built with abi/guest exports and imports.
const (
	directModule     = abi.ImportModule
	exportABIVersion = abi.ExportABIVersion
	exportManifest   = abi.ExportManifest
	exportInput      = abi.ExportInput
	exportHandle     = abi.ExportHandle
	exportInitialize = "_initialize"
	exportStart      = "_start"
	wasiModule       = wasi_snapshot_preview1.ModuleName
)

var i32, i64 = api.ValueTypeI32, api.ValueTypeI64

// directExports are the exports a direct-ABI guest must have, with their
// signatures (params, results).
var directExports = map[string][2][]api.ValueType{
	exportABIVersion: {nil, {i32}},
	exportManifest:   {nil, {i64}},
	exportInput:      {{i32}, {i32}},
	exportHandle:     {{i32}, nil},
}

// class is one wazero runtime for direct-ABI plugins with one memory limit.
// Runtimes share the host's compilation cache, so a module compiles once per
// digest and limit, and from the disk cache after a restart.
type class struct {
	rt    wazero.Runtime
	pages uint32
	host  *Host
}

func (h *Host) class(ctx context.Context, pages uint32) (*class, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("host: %w", ErrClosed)
	}
	if c, ok := h.classes[pages]; ok {
		return c, nil
	}
	rt := wazero.NewRuntimeWithConfig(ctx, h.runtimeConfig(pages))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("host: wasi: %w", err)
	}
	if err := instantiateDirectHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	if err := instantiateMeterHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	c := &class{rt: rt, pages: pages, host: h}
	h.classes[pages] = c
	return c, nil
}

// directHostFuncs are the functions of module "warden".
var directHostFuncs = map[string]struct {
	fn      api.GoModuleFunc
	params  []api.ValueType
	results []api.ValueType
}{
	abi.FuncSuccess:   {hostSuccess, []api.ValueType{i32, i32, i32, i32}, nil},
	abi.FuncFailed:    {hostFailed, []api.ValueType{i32, i32, i32, i32, i32, i32, i32, i32}, nil},
	abi.FuncRejected:  {hostRejected, []api.ValueType{i32, i32, i32, i32, i32, i32}, nil},
	abi.FuncDeferred:  {hostDeferred, []api.ValueType{i32, i32, i32, i32, i32, i32}, nil},
	abi.FuncPass:      {hostPass, []api.ValueType{i32, i32, i32, i32}, nil},
	abi.FuncEffect:    {hostEffect, []api.ValueType{i32, i32, i32, i32}, nil},
	abi.FuncNow:       {hostNow, nil, []api.ValueType{i64}},
	abi.FuncRandom:    {hostRandom, []api.ValueType{i32, i32}, nil},
	abi.FuncLog:       {hostLog, []api.ValueType{i32, i32, i32}, nil},
	abi.FuncQuery:     {hostQuery, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncValidate:  {hostValidate, []api.ValueType{i32, i32, i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncDigest:    {hostDigest, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncWalk:      {hostWalk, []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncCanonical: {hostCanonical, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncHash:      {hostHash, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncItems:     {hostItems, []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}},
	abi.FuncSplice:    {hostSplice, []api.ValueType{i32, i32, i32, i32}, nil},
}

func instantiateDirectHost(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(directModule)
	for name, f := range directHostFuncs {
		b.NewFunctionBuilder().WithGoModuleFunction(f.fn, f.params, f.results).Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("host: module %s: %w", directModule, err)
	}
	return nil
}

// read copies n bytes at ptr, or records a bad-pointer violation.
func read(st *callState, m api.Module, ptr, n uint64) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	b, ok := m.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("%d+%d", uint32(ptr), uint32(n)))
		return nil, false
	}
	return b, true
}

// readAll reads (ptr, len) pairs from stack after charging their total size.
func readAll(ctx context.Context, m api.Module, stack []uint64) (*callState, [][]byte, bool) {
	st := stateFrom(ctx)
	if st == nil {
		return nil, nil, false
	}
	total := 0
	for i := 1; i < len(stack); i += 2 {
		total += int(uint32(stack[i]))
	}
	if !st.rec.Charge(total) {
		return st, nil, false
	}
	out := make([][]byte, 0, len(stack)/2)
	for i := 0; i+1 < len(stack); i += 2 {
		b, ok := read(st, m, stack[i], stack[i+1])
		if !ok {
			return st, nil, false
		}
		out = append(out, b)
	}
	return st, out, true
}

func hostSuccess(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:4]); ok {
		st.rec.Success(string(v[0]), v[1])
	}
}

func hostFailed(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:8]); ok {
		st.rec.Result(abi.OutcomeFailed, string(v[0]), string(v[1]), string(v[2]), v[3])
	}
}

func hostRejected(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:6]); ok {
		st.rec.Result(abi.OutcomeRejected, string(v[0]), string(v[1]), string(v[2]), nil)
	}
}

func hostDeferred(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:6]); ok {
		st.rec.Result(abi.OutcomeDeferred, string(v[0]), string(v[1]), string(v[2]), nil)
	}
}

func hostPass(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:4]); ok {
		st.rec.Pass(v[0], v[1])
	}
}

func hostEffect(ctx context.Context, m api.Module, stack []uint64) {
	if st, v, ok := readAll(ctx, m, stack[:4]); ok {
		st.rec.Effect(string(v[0]), v[1])
	}
}

func hostNow(ctx context.Context, _ api.Module, stack []uint64) {
	var now int64
	if st := stateFrom(ctx); st != nil {
		now = st.now()
	}
	stack[0] = uint64(now)
}

func hostRandom(ctx context.Context, m api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		return
	}
	ptr, n := uint32(stack[0]), uint32(stack[1])
	if n > 1<<16 {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("random %d bytes", n))
		return
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("%d+%d", ptr, n))
		return
	}
	st.random(b)
}

func hostLog(ctx context.Context, m api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st == nil {
		return
	}
	n := uint32(stack[2])
	if n > 1024 {
		n = 1024
	}
	if b, ok := m.Memory().Read(uint32(stack[1]), n); ok {
		st.log(int32(uint32(stack[0])), string(b))
	}
}

// directEngine instantiates direct-ABI guests of one compiled module.
type directEngine struct {
	cls      *class
	compiled wazero.CompiledModule
	key      moduleKey // the compilation shared by digest (Host.compile)
	plugin   *Plugin   // set once the manifest is known
	// selects is the plugin each instance is asked to serve
	// (SelectPlugin), "" for a module serving one.
	selects  string
	grants   func(abi.Capability) bool
	hostOpts *Options
}

// reactorBuild is the command that builds a Go plugin's main package as a
// WASI reactor, the only shape the host runs.
const reactorBuild = "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm ./cmd"

// checkReactor refuses a module built as a WASI command: Go's runtime in
// such a module starts only from _start, which the host never calls, so
// its first export would fail with "wasmexport function called before
// runtime initialization". The error says how to build it instead. A
// command that exports __wasm_call_ctors is left to the extism loader,
// which initializes it through that export.
func checkReactor(cm wazero.CompiledModule) error {
	exports := cm.ExportedFunctions()
	_, start := exports[exportStart]
	_, init := exports[exportInitialize]
	_, ctors := exports["__wasm_call_ctors"]
	if start && !init && !ctors {
		return fmt.Errorf("host: it exports %s and not %s: %w; build it with `%s` (or `warden plugin build DIR`)",
			exportStart, exportInitialize, ErrCommandModule, reactorBuild)
	}
	return nil
}

func checkDirectModule(cm wazero.CompiledModule) error {
	exports := cm.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(directExports)) { // the first missing, always the same
		sig := directExports[name]
		f, ok := exports[name]
		if !ok {
			return fmt.Errorf("host: export %s missing: %w", name, ErrNotAPlugin)
		}
		if !sameTypes(f.ParamTypes(), sig[0]) || !sameTypes(f.ResultTypes(), sig[1]) {
			return fmt.Errorf("host: export %s has signature %s, want %s: %w",
				name, signature(f.ParamTypes(), f.ResultTypes()), signature(sig[0], sig[1]), ErrNotAPlugin)
		}
	}
	var denied []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasiModule:
			// wazero implements all of preview1; what a plugin may reach
			// through it is decided per instance (no FS, no env, fake clocks).
		case directModule:
			hf, ok := directHostFuncs[name]
			if !ok || !sameTypes(f.ParamTypes(), hf.params) || !sameTypes(f.ResultTypes(), hf.results) {
				denied = append(denied, mod+"."+name)
			}
		case meterModule:
			// Added by the metering (meter.go), which refuses a module
			// that imports from this module itself.
			if name != meterRefillName || len(f.ParamTypes()) != 0 || !sameTypes(f.ResultTypes(), []api.ValueType{i64}) {
				denied = append(denied, mod+"."+name)
			}
		default:
			denied = append(denied, mod+"."+name)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("host: imports %v: %w", denied, ErrImportDenied)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
