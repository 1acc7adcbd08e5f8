package host

// The Warden-over-extism ABI.
//
// A module that imports anything from "extism:host/env" is loaded through the
// extism go-sdk instead of the direct ABI, so a guard or builtin can be
// written with any extism PDK (AssemblyScript, Rust, C, JS, Go, …). Such a
// module speaks the following contract; everything else about it (pools,
// limits, failure policy, the observations a failure turns into) is the same
// as for a direct plugin.
//
// Exports (extism functions: no parameters, an optional i32 return code where
// 0 is success; anything else, or a PDK error, counts as a trap):
//
//	warden_manifest  writes the manifest (JSON, abi.Manifest) with the PDK's
//	                 output function; its "abi" field must equal abi.Version.
//	warden_handle    reads the request envelope (JSON, abi.Request) with the
//	                 PDK's input function and reports exactly one result
//	                 through the host functions below. Its output is ignored.
//
// Host functions, namespace "extism:host/user". Every argument is the offset
// of an extism memory block (i64, as the PDK's allocate functions return
// it); offset 0 stands for an empty string. The host charges a block's
// length against the call's output limit before it reads it, and an offset
// that is not an allocated block voids the call as a contract violation
// (bad_pointer).
//
//	warden_success(msg, data)               SUCCESS with optional JSON data
//	warden_failed(code, reason, next, data) FAILED
//	warden_rejected(code, reason, next)     REJECTED
//	warden_deferred(code, reason, next)     DEFERRED
//	warden_pass(args, facts)                guards only: pass, with optional
//	                                        rewritten args (JSON object) and
//	                                        provenance facts (JSON array)
//	warden_effect(kind, payload)            an effect (granted kinds only)
//	warden_now() -> i64                     Unix nanoseconds (a deterministic
//	                                        stand-in unless "clock" is granted)
//	warden_random(len) -> offset            a new block of len (≤ 65536)
//	                                        random bytes (deterministic unless
//	                                        "random" is granted)
//	warden_log(msg)                         one log line (first 1 KiB)
//
// The sandbox denies by default: no allowed hosts (the PDKs' http_request
// traps), no allowed paths, no extism config (the plugin's config travels in
// the request envelope), vars disabled, no environment or arguments. WASI is
// enabled only because the PDKs' language runtimes need it, with the same
// stand-ins for clocks and randomness as direct plugins. Memory is capped by
// the plugin's memoryPages limit (the guest's and the extism kernel's memory
// each), and every call runs under the plugin's deadline, which the
// metering of the guest's code enforces (meter.go; extism's own kernel is
// not metered: it runs no guest code). Each pooled instance is one extism plugin
// instance of one compiled plugin; the guest's runtime is initialized when
// the instance is made, under Policy.LoadTimeout. Caveat: with
// EXTISM_ENABLE_WASI_OUTPUT set in the host's environment, extism sends the
// guest's stdout and stderr to the process's own, so trap details and the
// out-of-memory classification are lost; leave it unset.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentwarden/warden/abi"
	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/sys"
)

const (
	extismEnvModule  = abi.ExtismEnvModule
	extismUserModule = abi.ExtismUserModule
)

// extismExports are the exports of a Warden-over-extism module.
var extismExports = []string{exportManifest, exportHandle}

// extismEnvFuncs are the functions extism provides in extism:host/env. A
// module may import any of them; the ones that reach outside (http, config,
// vars) are inert in Warden's sandbox.
var extismEnvFuncs = map[string]bool{
	"alloc": true, "free": true, "length": true, "length_unsafe": true, "reset": true,
	"load_u8": true, "load_u64": true, "store_u8": true, "store_u64": true,
	"input_set": true, "input_length": true, "input_offset": true, "input_load_u8": true, "input_load_u64": true,
	"output_set": true, "output_length": true, "output_offset": true,
	"error_set": true, "error_get": true, "memory_bytes": true,
	"config_get": true, "var_get": true, "var_set": true,
	"http_request": true, "http_status_code": true, "http_headers": true,
	"get_log_level": true, "log_trace": true, "log_debug": true, "log_info": true, "log_warn": true, "log_error": true,
}

var ptrType = extism.ValueTypePTR

// extismHostFuncs are the functions of extism:host/user.
var extismHostFuncs = []extism.HostFunction{
	extism.NewHostFunctionWithStack(abi.ExtismSuccess, xSuccess, []extism.ValueType{ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismFailed, xFailed, []extism.ValueType{ptrType, ptrType, ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismRejected, xRejected, []extism.ValueType{ptrType, ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismDeferred, xDeferred, []extism.ValueType{ptrType, ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismPass, xPass, []extism.ValueType{ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismEffect, xEffect, []extism.ValueType{ptrType, ptrType}, nil),
	extism.NewHostFunctionWithStack(abi.ExtismNow, xNow, nil, []extism.ValueType{extism.ValueTypeI64}),
	extism.NewHostFunctionWithStack(abi.ExtismRandom, xRandom, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{ptrType}),
	extism.NewHostFunctionWithStack(abi.ExtismLog, xLog, []extism.ValueType{ptrType}, nil),
}

// loadExtism loads a module built with an extism PDK. Load has checked the
// size and digest and found the extism:host/env import.
func (h *Host) loadExtism(ctx context.Context, name, digest string, bin []byte, pol Policy) (*Plugin, error) {
	if err := h.checkExtismModule(ctx, name, bin, pol); err != nil {
		return nil, err
	}
	p := &Plugin{host: h, source: name, digest: digest, moduleDigest: digest, policy: pol, pools: map[string]*pool{}}
	eng, err := h.newExtismEngine(ctx, name, bin, pol.Limits.MemoryPages)
	if err != nil {
		return nil, err
	}
	p.engine = eng
	m, impl, box, err := h.prewarm(ctx, p, name)
	if err != nil {
		_ = eng.close(ctx)
		return nil, err
	}
	limits, err := effectiveLimits(m.Limits, pol.Limits)
	if err != nil {
		impl.close(ctx)
		_ = eng.close(ctx)
		return nil, fmt.Errorf("host: load %s: %w", name, err)
	}
	if limits.MemoryPages != pol.Limits.MemoryPages {
		// The plugin asked for a tighter memory limit: compile it under that.
		impl.close(ctx)
		_ = eng.close(ctx)
		if eng, err = h.newExtismEngine(ctx, name, bin, limits.MemoryPages); err != nil {
			return nil, err
		}
		p.engine = eng
		if m, impl, box, err = h.prewarm(ctx, p, name); err != nil {
			_ = eng.close(ctx)
			return nil, err
		}
	}
	if err := h.finishLoad(ctx, p, m, limits, impl, box, name); err != nil {
		_ = eng.close(ctx)
		return nil, err
	}
	return p, nil
}

// checkExtismModule checks the exports and imports of an extism module. The
// module compiles from the host's cache: Load compiled it a moment ago.
func (h *Host) checkExtismModule(ctx context.Context, name string, bin []byte, pol Policy) error {
	cls, err := h.class(ctx, uint32(pol.Limits.MemoryPages))
	if err != nil {
		return err
	}
	cm, err := cls.rt.CompileModule(ctx, bin)
	if err != nil {
		return fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
	}
	defer cm.Close(ctx)
	exports := cm.ExportedFunctions()
	for _, fn := range extismExports {
		f, ok := exports[fn]
		if !ok {
			return fmt.Errorf("host: load %s: host: extism export %s missing: %w", name, fn, ErrNotAPlugin)
		}
		if res := f.ResultTypes(); len(f.ParamTypes()) != 0 || len(res) > 1 || len(res) == 1 && res[0] != i32 {
			return fmt.Errorf("host: load %s: host: extism export %s has signature %s, want () -> () or () -> (i32): %w",
				name, fn, signature(f.ParamTypes(), res), ErrNotAPlugin)
		}
	}
	user := map[string]extism.HostFunction{}
	for _, f := range extismHostFuncs {
		user[f.Name] = f
	}
	var denied []string
	for _, f := range cm.ImportedFunctions() {
		mod, fn, _ := f.Import()
		switch mod {
		case wasiModule:
			// Decided per instance, as for direct plugins.
		case extismEnvModule:
			if !extismEnvFuncs[fn] {
				denied = append(denied, mod+"."+fn)
			}
		case extismUserModule:
			hf, ok := user[fn]
			if !ok || !sameTypes(f.ParamTypes(), hf.Params) || !sameTypes(f.ResultTypes(), hf.Returns) {
				denied = append(denied, mod+"."+fn)
			}
		default:
			denied = append(denied, mod+"."+fn)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("host: load %s: host: imports %v: %w", name, denied, ErrImportDenied)
	}
	return nil
}

// extismEngine makes instances of one extism compiled plugin. Each has its
// own wazero runtime (extism's design), sharing the host's compilation cache.
type extismEngine struct {
	h        *Host
	compiled *extism.CompiledPlugin
}

func (h *Host) newExtismEngine(ctx context.Context, name string, bin []byte, pages int) (*extismEngine, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("host: %w", ErrClosed)
	}
	bin, err := h.instrument(bin, callStackBudget(uint32(pages)))
	if err != nil {
		return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
	}
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: bin, Name: "main"}},
		Memory: &extism.ManifestMemory{
			MaxPages:             uint32(pages),
			MaxHttpResponseBytes: 0,
			MaxVarBytes:          0, // var_set traps
		},
		// No Config, AllowedHosts, AllowedPaths; no Timeout: every call
		// carries the plugin's deadline.
	}
	cfg := extism.PluginConfig{
		RuntimeConfig: h.runtimeConfig(uint32(pages)),
		EnableWasi:    true,
	}
	cp, err := extism.NewCompiledPlugin(ctx, manifest, cfg, append(extismHostFuncs[:len(extismHostFuncs):len(extismHostFuncs)], extismMeterFunc()))
	if err != nil {
		return nil, fmt.Errorf("host: compile %s: %w: %w", name, ErrCompile, err)
	}
	return &extismEngine{h: h, compiled: cp}, nil
}

func (e *extismEngine) kind() string { return "extism" }

func (e *extismEngine) close(ctx context.Context) error { return e.compiled.Close(ctx) }

// newInstance instantiates the plugin and reads its manifest, which also
// runs the guest's runtime initialization (_initialize) under ctx.
func (e *extismEngine) newInstance(ctx context.Context, box *sandbox) (instanceImpl, error) {
	// extism overrides the module name and start functions, and keeps the
	// rest: stdout/stderr, the clocks and the random source of the sandbox;
	// no FS (no allowed paths), no env, no args.
	//
	// A start function runs inside Instance, before extism has a plugin to
	// put in the context, and a metered start function calls the
	// warden_meter host function, which extism's wrapper refuses without
	// one. The meter's function reads nothing of the plugin, so a typed nil
	// satisfies the wrapper; any other host function a start function calls
	// fails as it did before (the start fails, the load is refused).
	ictx := context.WithValue(ctx, extism.PluginCtxKey("plugin"), (*extism.Plugin)(nil))
	pl, err := e.compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: box.moduleConfig(false)})
	if err != nil {
		return nil, err
	}
	log := e.h.log
	pl.SetLogger(func(level extism.LogLevel, msg string) {
		log.Debug("extism plugin log", "level", level.String(), "msg", truncate(msg, 1024))
	})
	x := &extismInstance{pl: pl, box: box}
	man, err := x.call(ctx, exportManifest, nil)
	if err != nil {
		x.close(ctx)
		return nil, err
	}
	x.man = man
	return x, nil
}

type extismInstance struct {
	pl  *extism.Plugin
	box *sandbox
	man []byte // the manifest, read when the instance was made
}

// call runs one export and normalizes its failure: a deadline the guest's
// runtime initialization ran into is reported as the wasm deadline exit, as
// a direct plugin's would be (extism wraps that error with %v).
func (x *extismInstance) call(ctx context.Context, fn string, in []byte) ([]byte, error) {
	rc, out, err := x.pl.CallWithContext(ctx, fn, in)
	if err != nil {
		var ee *sys.ExitError
		if !errors.As(err, &ee) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errors.Join(sys.NewExitError(sys.ExitCodeDeadlineExceeded), err)
		}
		return nil, err
	}
	if rc != 0 {
		return nil, fmt.Errorf("%s returned %d", fn, rc)
	}
	return out, nil
}

// abiVersion is the manifest's "abi" field. A manifest that does not say
// reads as the host's version, so that ParseManifest reports what is wrong.
func (x *extismInstance) abiVersion(context.Context) (uint32, error) {
	var v struct {
		ABI *uint32 `json:"abi"`
	}
	if json.Unmarshal(x.man, &v) != nil || v.ABI == nil {
		return abi.Version, nil
	}
	return *v.ABI, nil
}

func (x *extismInstance) manifest(context.Context) ([]byte, error) {
	if len(x.man) > 1<<20 {
		return nil, fmt.Errorf("manifest of %d bytes", len(x.man))
	}
	return x.man, nil
}

func (x *extismInstance) handle(ctx context.Context, req []byte, _ int) error {
	_, err := x.call(ctx, exportHandle, req)
	return err
}

func (x *extismInstance) stderr() string { return x.box.stderrBuf.String() }

func (x *extismInstance) close(ctx context.Context) { _ = x.pl.Close(ctx) }

// --- extism:host/user ---

// xRead reads the blocks at the offsets in stack after charging their total
// length, or records why it could not.
func xRead(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) (*callState, [][]byte, bool) {
	st := stateFrom(ctx)
	if st == nil {
		return nil, nil, false
	}
	var lens [4]uint64
	total := uint64(0)
	for i, off := range stack {
		if off == 0 {
			continue
		}
		n, err := cp.LengthWithContext(ctx, off)
		if err != nil || n == 0 {
			st.rec.Violate(abi.ViolationBadPointer, fmt.Sprint(off))
			return st, nil, false
		}
		lens[i] = n
		total += n
	}
	if !st.rec.Charge(int(total)) {
		return st, nil, false
	}
	out := make([][]byte, len(stack))
	for i, off := range stack {
		if lens[i] == 0 {
			continue
		}
		b, err := cp.ReadBytes(off)
		if err != nil || uint64(len(b)) != lens[i] {
			st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("%d+%d", off, lens[i]))
			return st, nil, false
		}
		out[i] = b
	}
	return st, out, true
}

func xSuccess(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:2]); ok {
		st.rec.Success(string(v[0]), v[1])
	}
}

func xFailed(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:4]); ok {
		st.rec.Result(abi.OutcomeFailed, string(v[0]), string(v[1]), string(v[2]), v[3])
	}
}

func xRejected(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:3]); ok {
		st.rec.Result(abi.OutcomeRejected, string(v[0]), string(v[1]), string(v[2]), nil)
	}
}

func xDeferred(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:3]); ok {
		st.rec.Result(abi.OutcomeDeferred, string(v[0]), string(v[1]), string(v[2]), nil)
	}
}

func xPass(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:2]); ok {
		st.rec.Pass(v[0], v[1])
	}
}

func xEffect(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	if st, v, ok := xRead(ctx, cp, stack[:2]); ok {
		st.rec.Effect(string(v[0]), v[1])
	}
}

func xNow(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
	var now int64
	if st := stateFrom(ctx); st != nil {
		now = st.now()
	}
	stack[0] = uint64(now)
}

func xRandom(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	n := stack[0]
	stack[0] = 0
	st := stateFrom(ctx)
	if st == nil || n == 0 {
		return
	}
	if n > 1<<16 {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("random %d bytes", n))
		return
	}
	b := make([]byte, n)
	st.random(b)
	off, err := cp.AllocWithContext(ctx, n)
	if err != nil || off == 0 || !cp.Memory().Write(uint32(off), b) {
		st.rec.Violate(abi.ViolationBadPointer, fmt.Sprintf("random %d bytes: no memory", n))
		return
	}
	stack[0] = off
}

func xLog(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
	st := stateFrom(ctx)
	off := stack[0]
	if st == nil || off == 0 {
		return
	}
	n, err := cp.LengthWithContext(ctx, off)
	if err != nil || n == 0 {
		return
	}
	if n > 1024 {
		n = 1024
	}
	if b, ok := cp.Memory().Read(uint32(off), uint32(n)); ok {
		st.log(0, string(b))
	}
}
