package host

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Call-stack bound.
//
// wazero's compiler keeps a guest's call frames on a stack of its own, a Go
// byte slice on the host's heap that doubles whenever it fills, up to a fixed
// ceiling of 50 MB (internal/engine/wazevo, callStackCeiling, not
// configurable in v1.12). A guest that recurses without touching its linear
// memory therefore spends about 140 MiB of host heap, outside its memory
// limit, before it traps. boundCallStack rewrites a module at load so that
// every function it defines counts the frame it opens against a budget of
// the plugin's own: each defined function f becomes a wrapper with f's
// index, type and name that adds f's frame estimate to a global, traps
// (unreachable) past the budget, calls f's original body (moved to a new
// index at the end) and subtracts again. Calls, exports, tables, the start
// function and ref.func all name f's index, so every frame is counted, and
// no instruction of the original code is rewritten. Imported functions
// are the host's and are not counted.
//
// A wasm exception that leaves a function skips the subtraction; the count
// then only errs high, which is the safe side (no first-party language
// runtime throws wasm exceptions).

// stackFrameBase is the bytes charged per frame before its values: the
// compiled frame's return address, saved registers and alignment, plus the
// wrapper's own frame.
const stackFrameBase = 96

// stackSlot is the bytes charged per parameter and local of a function.
const stackSlot = 16

// callStackBudget is the frame bytes a plugin's calls may hold: a quarter of
// its memory limit, at most 8 MiB. The engine's stack doubles as it grows,
// so its real size stays within about twice the count.
func callStackBudget(pages uint32) uint32 {
	b := uint64(pages) * wasmPage / 4
	return uint32(min(b, 8<<20))
}

// errStackRewrite is returned for a module boundCallStack cannot parse.
var errStackRewrite = errors.New("module cannot be instrumented")

// stackExhausted is how a trap of the call-stack bound reads in a call's
// error: the wrapper's unreachable.
const stackExhausted = "call stack over the plugin's limit"

const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secGlobal   = 6
	secExport   = 7
	secCode     = 10
	secDataCnt  = 12
)

// stackGlobalExport is the export name of the depth counter, so the host can
// tell a trap of the bound from any other unreachable.
const stackGlobalExport = "warden_call_stack"

type wasmSection struct {
	id   byte
	body []byte
}

type wasmReader struct {
	b   []byte
	off int
	err error
}

func (r *wasmReader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *wasmReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("host: call-stack bound: truncated at byte %d: %w", r.off, errStackRewrite)
	}
}

func (r *wasmReader) u32() uint32 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if v > 1<<32-1 {
				r.fail()
			}
			return uint32(v)
		}
	}
	r.fail()
	return 0
}

func (r *wasmReader) bytes(n uint32) []byte {
	if r.err != nil || uint64(r.off)+uint64(n) > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b
}

func (r *wasmReader) name() string { return string(r.bytes(r.u32())) }

func (r *wasmReader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// callStackVersion names what rewriteCallStack writes: change it whenever
// its output changes for some input (see rewriteVersion).
const callStackVersion = "s1"

// stackBound turns the instrumentation off for benchmarks that measure it.
var stackBound = true

// boundCallStack returns bin as every plugin runs it: metered (meter.go),
// then bound in its call stack with a budget of budget bytes. The order is
// fixed: the call-stack wrappers are added last, so they carry no fuel check
// of their own (the body each calls checks at its entry), and the metering
// sees only the guest's own code. The result is kept by the digest of bin
// (rewriteMemo).
func boundCallStack(bin []byte, budget uint32) ([]byte, error) {
	k := newRewriteKey(bin, budget)
	if b, ok := rewrites.get(k); ok {
		return b, nil
	}
	b, err := rewriteModule(bin, budget)
	if err != nil {
		return nil, err
	}
	rewrites.put(k, b)
	return b, nil
}

// rewriteModule meters bin, then bounds its call stack, then merges its
// data segments (datamerge.go).
func rewriteModule(bin []byte, budget uint32) ([]byte, error) {
	m, err := meterModuleBytes(bin)
	if err != nil {
		return nil, err
	}
	b, err := rewriteCallStack(m, budget)
	if err != nil {
		return nil, err
	}
	return mergeData(b), nil
}

// rewriteCallStack returns bin instrumented with a call-stack budget of
// budget bytes (see above).
func rewriteCallStack(bin []byte, budget uint32) ([]byte, error) {
	if !stackBound {
		return bin, nil
	}
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, fmt.Errorf("host: call-stack bound: not a wasm 1 module: %w", errStackRewrite)
	}
	r := &wasmReader{b: bin, off: 8}
	var secs []wasmSection
	for r.off < len(bin) && r.err == nil {
		id := r.byte()
		body := r.bytes(r.u32())
		secs = append(secs, wasmSection{id, body})
	}
	if r.err != nil {
		return nil, r.err
	}

	var types [][2]uint32 // params, results per type index
	var funcTypes []uint32
	var importedFuncs, importedGlobals, definedGlobals uint32
	var codes [][]byte
	for _, s := range secs {
		r := &wasmReader{b: s.body}
		switch s.id {
		case secType:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				if r.byte() != 0x60 {
					return nil, fmt.Errorf("host: call-stack bound: type %d is not a function type: %w", i, errStackRewrite)
				}
				p := r.u32()
				r.bytes(p)
				res := r.u32()
				r.bytes(res)
				types = append(types, [2]uint32{p, res})
			}
		case secImport:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.name()
				r.name()
				switch r.byte() {
				case 0: // function
					r.u32()
					importedFuncs++
				case 1: // table
					r.byte()
					r.limits()
				case 2: // memory
					r.limits()
				case 3: // global
					r.byte()
					r.byte()
					importedGlobals++
				case 4: // tag
					r.byte()
					r.u32()
				default:
					r.fail()
				}
			}
		case secFunction:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				funcTypes = append(funcTypes, r.u32())
			}
		case secGlobal:
			definedGlobals = r.u32()
		case secCode:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				codes = append(codes, r.bytes(r.u32()))
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	if len(codes) != len(funcTypes) {
		return nil, fmt.Errorf("host: call-stack bound: %d bodies for %d functions: %w", len(codes), len(funcTypes), errStackRewrite)
	}
	defined := uint32(len(funcTypes))
	g := importedGlobals + definedGlobals // the counter's global index

	// the wrappers, then the original bodies at defined..2*defined-1
	var code []byte
	code = appendU32(code, 2*defined)
	for k, t := range funcTypes {
		if int(t) >= len(types) {
			return nil, fmt.Errorf("host: call-stack bound: function %d has type %d of %d: %w", k, t, len(types), errStackRewrite)
		}
		locals, err := countLocals(codes[k])
		if err != nil {
			return nil, err
		}
		params := types[t][0]
		w := uint64(stackFrameBase) + uint64(stackSlot)*(uint64(params)+locals)
		w = min(w, uint64(budget)+1)
		var b []byte
		b = append(b, 0)                      // no locals
		b = append(b, 0x23)                   // global.get g
		b = appendU32(b, g)                   //
		b = append(b, 0x41)                   // i32.const w
		b = appendS32(b, int32(w))            //
		b = append(b, 0x6a, 0x24)             // i32.add; global.set g
		b = appendU32(b, g)                   //
		b = append(b, 0x23)                   // global.get g
		b = appendU32(b, g)                   //
		b = append(b, 0x41)                   // i32.const budget
		b = appendS32(b, int32(budget))       //
		b = append(b, 0x4b, 0x04, 0x40, 0x00) // i32.gt_u; if; unreachable
		b = append(b, 0x0b)                   // end
		for i := uint32(0); i < params; i++ {
			b = append(b, 0x20) // local.get i
			b = appendU32(b, i)
		}
		b = append(b, 0x10) // call the original body
		b = appendU32(b, importedFuncs+defined+uint32(k))
		b = append(b, 0x23) // global.get g
		b = appendU32(b, g)
		b = append(b, 0x41)
		b = appendS32(b, int32(w))
		b = append(b, 0x6b, 0x24) // i32.sub; global.set g
		b = appendU32(b, g)
		b = append(b, 0x0b) // end
		code = appendU32(code, uint32(len(b)))
		code = append(code, b...)
	}
	for _, c := range codes {
		code = appendU32(code, uint32(len(c)))
		code = append(code, c...)
	}
	var fn []byte
	fn = appendU32(fn, 2*defined)
	for i := 0; i < 2; i++ {
		for _, t := range funcTypes {
			fn = appendU32(fn, t)
		}
	}
	global := []byte{0x7f, 0x01, 0x41, 0x00, 0x0b} // mut i32 = 0

	out := append([]byte(nil), bin[:8]...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	order := func(id byte) int { // the required order of known sections
		switch id {
		case 13: // tag: between memory and global
			return 55
		case secDataCnt: // data count: between element and code
			return 95
		}
		return int(id) * 10
	}
	haveGlobal, haveExport, haveFunc := false, false, false
	for _, s := range secs {
		if s.id != secCustom && !haveGlobal && order(s.id) > order(secGlobal) {
			emit(secGlobal, append(appendU32(nil, 1), global...))
			haveGlobal = true
		}
		if s.id != secCustom && !haveExport && order(s.id) > order(secExport) {
			emit(secExport, exportCounter(nil, g))
			haveExport = true
		}
		switch s.id {
		case secCustom:
			r := &wasmReader{b: s.body}
			if strings.HasPrefix(r.name(), ".debug_") {
				continue // code offsets moved: drop DWARF rather than mislead
			}
			out = append(out, s.id)
			out = appendU32(out, uint32(len(s.body)))
			out = append(out, s.body...)
		case secFunction:
			emit(secFunction, fn)
			haveFunc = true
		case secGlobal:
			r := &wasmReader{b: s.body}
			n := r.u32()
			emit(secGlobal, append(append(appendU32(nil, n+1), s.body[r.off:]...), global...))
			haveGlobal = true
		case secExport:
			emit(secExport, exportCounter(s.body, g))
			haveExport = true
		case secCode:
			emit(secCode, code)
		default:
			emit(s.id, s.body)
		}
	}
	if !haveGlobal {
		emit(secGlobal, append(appendU32(nil, 1), global...))
	}
	if !haveExport {
		emit(secExport, exportCounter(nil, g))
	}
	if defined > 0 && !haveFunc {
		return nil, fmt.Errorf("host: call-stack bound: code without a function section: %w", errStackRewrite)
	}
	return out, nil
}

// exportCounter appends the counter's export to an export section's body.
func exportCounter(body []byte, g uint32) []byte {
	var n uint32
	rest := []byte(nil)
	if body != nil {
		r := &wasmReader{b: body}
		n = r.u32()
		rest = body[r.off:]
	}
	out := appendU32(nil, n+1)
	out = append(out, rest...)
	out = appendU32(out, uint32(len(stackGlobalExport)))
	out = append(out, stackGlobalExport...)
	out = append(out, 0x03) // global
	return appendU32(out, g)
}

// countLocals sums the local declarations at the start of a body.
func countLocals(body []byte) (uint64, error) {
	r := &wasmReader{b: body}
	n := r.u32()
	var total uint64
	for i := uint32(0); i < n && r.err == nil; i++ {
		total += uint64(r.u32())
		r.byte()
	}
	return total, r.err
}
