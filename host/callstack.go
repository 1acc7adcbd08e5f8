package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/host/internal/wasmbin"
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

// stackGlobalExport is the export name of the depth counter, so the host can
// tell a trap of the bound from any other unreachable.
const stackGlobalExport = "warden_call_stack"

// stackErr is a failure of the wasm reader as the call-stack bound reports it.
func stackErr(err error) error {
	var de *wasmbin.DecodeError
	switch {
	case errors.Is(err, wasmbin.ErrNotWasm1):
		return fmt.Errorf("host: call-stack bound: not a wasm 1 module: %w", errStackRewrite)
	case errors.As(err, &de):
		return fmt.Errorf("host: call-stack bound: truncated at byte %d: %w", de.Off, errStackRewrite)
	}
	return fmt.Errorf("host: call-stack bound: %w: %w", err, errStackRewrite)
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
// budget bytes (see above). Its steps: read the functions' types and
// bodies, write a wrapper per function, write the module with the wrappers
// in the functions' places, their bodies after them, and the counter.
func rewriteCallStack(bin []byte, budget uint32) ([]byte, error) {
	if !stackBound {
		return bin, nil
	}
	secs, err := wasmbin.Sections(bin)
	if err != nil {
		return nil, stackErr(err)
	}
	m, err := readStackModule(secs)
	if err != nil {
		return nil, err
	}
	code, err := m.wrappedCode(budget)
	if err != nil {
		return nil, err
	}
	return m.write(bin[:8], secs, code)
}

// stackModule is what the call-stack bound needs to know of a module.
type stackModule struct {
	types                          [][2]uint32 // params, results per type index
	funcTypes                      []uint32    // per defined function
	codes                          [][]byte    // per defined function
	importedFuncs, importedGlobals uint32
	definedGlobals                 uint32
}

// counter is the index of the global the rewrite adds.
func (m *stackModule) counter() uint32 { return m.importedGlobals + m.definedGlobals }

func readStackModule(secs []wasmbin.Section) (*stackModule, error) {
	m := new(stackModule)
	for _, s := range secs {
		r := &wasmbin.Reader{B: s.Body}
		var err error
		switch s.ID {
		case wasmbin.SecType:
			err = m.readTypes(r)
		case wasmbin.SecImport:
			m.readImports(r)
		case wasmbin.SecFunction:
			n := r.U32()
			for i := uint32(0); i < n && r.Err == nil; i++ {
				m.funcTypes = append(m.funcTypes, r.U32())
			}
		case wasmbin.SecGlobal:
			m.definedGlobals = r.U32()
		case wasmbin.SecCode:
			n := r.U32()
			for i := uint32(0); i < n && r.Err == nil; i++ {
				m.codes = append(m.codes, r.Bytes(r.U32()))
			}
		}
		if err != nil {
			return nil, err
		}
		if r.Err != nil {
			return nil, stackErr(r.Err)
		}
	}
	if len(m.codes) != len(m.funcTypes) {
		return nil, fmt.Errorf("host: call-stack bound: %d bodies for %d functions: %w", len(m.codes), len(m.funcTypes), errStackRewrite)
	}
	return m, nil
}

func (m *stackModule) readTypes(r *wasmbin.Reader) error {
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		if r.Byte() != 0x60 {
			return fmt.Errorf("host: call-stack bound: type %d is not a function type: %w", i, errStackRewrite)
		}
		p := r.U32()
		r.Bytes(p)
		res := r.U32()
		r.Bytes(res)
		m.types = append(m.types, [2]uint32{p, res})
	}
	return nil
}

func (m *stackModule) readImports(r *wasmbin.Reader) {
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		r.Name()
		r.Name()
		switch r.Byte() {
		case 0: // function
			r.U32()
			m.importedFuncs++
		case 1: // table
			r.Byte()
			r.Limits()
		case 2: // memory
			r.Limits()
		case 3: // global
			r.Byte()
			r.Byte()
			m.importedGlobals++
		case 4: // tag
			r.Byte()
			r.U32()
		default:
			r.Fail()
		}
	}
}

// wrappedCode is the new code section's body: the wrappers, then the
// original bodies at defined..2*defined-1.
func (m *stackModule) wrappedCode(budget uint32) ([]byte, error) {
	defined := uint32(len(m.funcTypes))
	code := wasmbin.AppendU32(nil, 2*defined)
	for k, t := range m.funcTypes {
		if int(t) >= len(m.types) {
			return nil, fmt.Errorf("host: call-stack bound: function %d has type %d of %d: %w", k, t, len(m.types), errStackRewrite)
		}
		locals, err := countLocals(m.codes[k])
		if err != nil {
			return nil, stackErr(err)
		}
		params := m.types[t][0]
		w := uint64(stackFrameBase) + uint64(stackSlot)*(uint64(params)+locals)
		w = min(w, uint64(budget)+1)
		b := appendWrapper(nil, m.counter(), uint32(w), budget, params, m.importedFuncs+defined+uint32(k))
		code = wasmbin.AppendU32(code, uint32(len(b)))
		code = append(code, b...)
	}
	for _, c := range m.codes {
		code = wasmbin.AppendU32(code, uint32(len(c)))
		code = append(code, c...)
	}
	return code, nil
}

// appendWrapper appends the body of a wrapper that adds w to global g, traps
// past budget, calls function body with its params parameters, and
// subtracts w again.
func appendWrapper(b []byte, g, w, budget, params, body uint32) []byte {
	b = append(b, 0)                               // no locals
	b = append(b, 0x23)                            // global.get g
	b = wasmbin.AppendU32(b, g)                    //
	b = append(b, 0x41)                            // i32.const w
	b = wasmbin.AppendS64(b, int64(int32(w)))      //
	b = append(b, 0x6a, 0x24)                      // i32.add; global.set g
	b = wasmbin.AppendU32(b, g)                    //
	b = append(b, 0x23)                            // global.get g
	b = wasmbin.AppendU32(b, g)                    //
	b = append(b, 0x41)                            // i32.const budget
	b = wasmbin.AppendS64(b, int64(int32(budget))) //
	b = append(b, 0x4b, 0x04, 0x40, 0x00)          // i32.gt_u; if; unreachable
	b = append(b, 0x0b)                            // end
	for i := uint32(0); i < params; i++ {
		b = append(b, 0x20) // local.get i
		b = wasmbin.AppendU32(b, i)
	}
	b = append(b, 0x10) // call the original body
	b = wasmbin.AppendU32(b, body)
	b = append(b, 0x23) // global.get g
	b = wasmbin.AppendU32(b, g)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, int64(int32(w)))
	b = append(b, 0x6b, 0x24) // i32.sub; global.set g
	b = wasmbin.AppendU32(b, g)
	return append(b, 0x0b) // end
}

// write writes the module: the function section with every type twice
// (wrappers, then bodies), the counter global and its export (added in
// their places when the module has no such section), code as given.
func (m *stackModule) write(preamble []byte, secs []wasmbin.Section, code []byte) ([]byte, error) {
	defined := uint32(len(m.funcTypes))
	g := m.counter()
	fn := wasmbin.AppendU32(nil, 2*defined)
	for range 2 {
		for _, t := range m.funcTypes {
			fn = wasmbin.AppendU32(fn, t)
		}
	}
	global := []byte{0x7f, 0x01, 0x41, 0x00, 0x0b} // mut i32 = 0

	out := append([]byte(nil), preamble...)
	emit := func(id byte, body []byte) { out = wasmbin.AppendSection(out, id, body) }
	haveGlobal, haveExport, haveFunc := false, false, false
	for _, s := range secs {
		if s.ID != wasmbin.SecCustom && !haveGlobal && wasmbin.Order(s.ID) > wasmbin.Order(wasmbin.SecGlobal) {
			emit(wasmbin.SecGlobal, append(wasmbin.AppendU32(nil, 1), global...))
			haveGlobal = true
		}
		if s.ID != wasmbin.SecCustom && !haveExport && wasmbin.Order(s.ID) > wasmbin.Order(wasmbin.SecExport) {
			emit(wasmbin.SecExport, exportCounter(nil, g))
			haveExport = true
		}
		switch s.ID {
		case wasmbin.SecCustom:
			r := &wasmbin.Reader{B: s.Body}
			if strings.HasPrefix(r.Name(), ".debug_") {
				continue // code offsets moved: drop DWARF rather than mislead
			}
			emit(s.ID, s.Body)
		case wasmbin.SecFunction:
			emit(wasmbin.SecFunction, fn)
			haveFunc = true
		case wasmbin.SecGlobal:
			r := &wasmbin.Reader{B: s.Body}
			n := r.U32()
			emit(wasmbin.SecGlobal, append(append(wasmbin.AppendU32(nil, n+1), s.Body[r.Off:]...), global...))
			haveGlobal = true
		case wasmbin.SecExport:
			emit(wasmbin.SecExport, exportCounter(s.Body, g))
			haveExport = true
		case wasmbin.SecCode:
			emit(wasmbin.SecCode, code)
		default:
			emit(s.ID, s.Body)
		}
	}
	if !haveGlobal {
		emit(wasmbin.SecGlobal, append(wasmbin.AppendU32(nil, 1), global...))
	}
	if !haveExport {
		emit(wasmbin.SecExport, exportCounter(nil, g))
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
		r := &wasmbin.Reader{B: body}
		n = r.U32()
		rest = body[r.Off:]
	}
	out := wasmbin.AppendU32(nil, n+1)
	out = append(out, rest...)
	out = wasmbin.AppendName(out, stackGlobalExport)
	out = append(out, 0x03) // global
	return wasmbin.AppendU32(out, g)
}

// countLocals sums the local declarations at the start of a body.
func countLocals(body []byte) (uint64, error) {
	r := &wasmbin.Reader{B: body}
	n := r.U32()
	var total uint64
	for i := uint32(0); i < n && r.Err == nil; i++ {
		total += uint64(r.U32())
		r.Byte()
	}
	return total, r.Err
}
