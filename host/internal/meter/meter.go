package meter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/host/internal/wasmbin"
)

// Version names what Instrument writes: change it whenever its output
// changes for some input, so that no rewrite kept on disk outlives it.
const Version = "m3"

// The import Instrument adds: a function of type () -> i64 that returns the
// guest's next quantum of fuel, or ends the call.
const (
	ImportModule = "warden_meter"
	ImportName   = "refill"
)

const (
	secCustom   = wasmbin.SecCustom
	secType     = wasmbin.SecType
	secImport   = wasmbin.SecImport
	secFunction = wasmbin.SecFunction
	secTable    = wasmbin.SecTable
	secMemory   = wasmbin.SecMemory
	secGlobal   = wasmbin.SecGlobal
	secExport   = wasmbin.SecExport
	secStart    = wasmbin.SecStart
	secElement  = wasmbin.SecElement
	secCode     = wasmbin.SecCode
	secData     = wasmbin.SecData
	secTag      = wasmbin.SecTag
)

var order = wasmbin.Order

// module is what the rewriter needs to know of its input.
type module struct {
	types      uint32   // function types
	params     []uint32 // parameters per function type
	funcTypes  []uint32 // type per defined function
	impFuncs   uint32
	funcs      uint32 // imported and defined
	globals    uint32 // imported and defined
	defGlobals uint32
}

// Instrument returns bin metered as the package doc describes. It is
// deterministic: the same input gives the same output. Its steps: split
// the module into sections, read what the rewrite needs of them, write
// each section rewritten.
func Instrument(bin []byte) ([]byte, error) {
	secs, err := splitSections(bin)
	if err != nil {
		return nil, err
	}
	m, err := readModule(secs)
	if err != nil {
		return nil, err
	}
	w := &writer{m: m, have: map[byte]bool{}}
	w.out = append(make([]byte, 0, len(bin)+len(bin)/4), bin[:8]...)
	for _, s := range secs {
		if err := w.section(s); err != nil {
			return nil, err
		}
	}
	w.missing(1 << 30)
	return w.out, nil
}

// splitSections splits bin into its sections and refuses unknown and
// repeated ones, and the tag section.
func splitSections(bin []byte) ([]wasmbin.Section, error) {
	secs, err := wasmbin.Sections(bin)
	if errors.Is(err, wasmbin.ErrNotWasm1) {
		return nil, fmt.Errorf("meter: not a wasm 1 module: %w", ErrMalformed)
	}
	// The sections before a header that cannot be read are checked first,
	// in the order they come.
	seen := map[byte]bool{}
	for _, s := range secs {
		if s.ID > secTag {
			return nil, fmt.Errorf("meter: unknown section %d: %w", s.ID, ErrMalformed)
		}
		if s.ID != secCustom {
			if seen[s.ID] {
				return nil, fmt.Errorf("meter: section %d twice: %w", s.ID, ErrMalformed)
			}
			seen[s.ID] = true
		}
		if s.ID == secTag {
			return nil, fmt.Errorf("meter: tag section (exception handling): %w", ErrUnsupported)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("meter: section headers: %w", err)
	}
	return secs, nil
}

// readModule reads what the rewrite needs to know of the module: its types,
// imports, functions and globals.
func readModule(secs []wasmbin.Section) (*module, error) {
	m := new(module)
	var defFuncs, codeBodies uint32
	for _, s := range secs {
		r := &wasmbin.Reader{B: s.Body}
		var err error
		switch s.ID {
		case secType:
			m.params, err = readTypes(r)
			m.types = uint32(len(m.params))
		case secImport:
			err = readImports(r, m)
		case secFunction:
			defFuncs = r.U32()
			for i := uint32(0); i < defFuncs && r.Err == nil; i++ {
				t := r.U32()
				if r.Err == nil && t >= m.types {
					err = fmt.Errorf("meter: function %d has type %d of %d: %w", i, t, m.types, ErrMalformed)
					break
				}
				m.funcTypes = append(m.funcTypes, t)
			}
		case secGlobal:
			m.defGlobals = r.U32()
		case secCode:
			codeBodies = r.U32()
		case secTable, secMemory, secData:
			// copied unread, but a count no bytes back is refused here:
			// wazero's decoder allocates for it before it reads on
			if n := r.U32(); r.Err == nil && uint64(n) > uint64(len(s.Body)) {
				err = fmt.Errorf("meter: section %d counts %d entries in %d bytes: %w", s.ID, n, len(s.Body), ErrMalformed)
			}
		}
		if err != nil {
			return nil, err
		}
		if r.Err != nil {
			return nil, fmt.Errorf("meter: section %d: %w", s.ID, r.Err)
		}
	}
	if codeBodies != defFuncs {
		return nil, fmt.Errorf("meter: %d bodies for %d functions: %w", codeBodies, defFuncs, ErrMalformed)
	}
	m.funcs = m.impFuncs + defFuncs
	m.globals += m.defGlobals
	return m, nil
}

// writer writes the metered module.
type writer struct {
	m    *module
	out  []byte
	have map[byte]bool // the sections written
}

func (w *writer) emit(id byte, body []byte) {
	w.out = wasmbin.AppendSection(w.out, id, body)
}

// missing emits the sections the rewriter adds to a module that has none
// of them, before the first section that must follow them.
func (w *writer) missing(next int) {
	if !w.have[secType] && next > order(secType) {
		w.emit(secType, appendRefillType(wasmbin.AppendU32(nil, 1)))
		w.have[secType] = true
	}
	if !w.have[secImport] && next > order(secImport) {
		w.emit(secImport, appendRefillImport(wasmbin.AppendU32(nil, 1), w.m.types))
		w.have[secImport] = true
	}
	if !w.have[secGlobal] && next > order(secGlobal) {
		w.emit(secGlobal, appendFuel(wasmbin.AppendU32(nil, 1)))
		w.have[secGlobal] = true
	}
}

// section writes s rewritten, after the added sections that must precede
// it.
func (w *writer) section(s wasmbin.Section) error {
	if s.ID != secCustom {
		w.missing(order(s.ID))
	}
	if s.ID == secCustom {
		return w.custom(s)
	}
	r := &wasmbin.Reader{B: s.Body}
	body, err := w.rewrite(r, s)
	if err != nil {
		return err
	}
	if r.Err != nil {
		return fmt.Errorf("meter: section %d: %w", s.ID, r.Err)
	}
	switch s.ID {
	case secGlobal, secExport, secStart, secElement, secCode:
		// rewritten from what was read: bytes after it would be lost
		if r.Off != len(s.Body) {
			return fmt.Errorf("meter: section %d: %d bytes after its entries: %w", s.ID, len(s.Body)-r.Off, ErrMalformed)
		}
	}
	w.have[s.ID] = true
	w.emit(s.ID, body)
	return nil
}

// custom writes a custom section: DWARF is dropped (code offsets moved,
// better none than misleading), the name section's function indices are
// shifted past the refill import.
func (w *writer) custom(s wasmbin.Section) error {
	r := &wasmbin.Reader{B: s.Body}
	name := r.Name()
	switch {
	case r.Err != nil:
		return fmt.Errorf("meter: custom section: %w", r.Err)
	case strings.HasPrefix(name, ".debug_"):
		return nil
	case name == "name":
		if nb, ok := shiftNames(s.Body[r.Off:], w.m.impFuncs); ok {
			w.emit(secCustom, append(wasmbin.AppendName(nil, name), nb...))
		}
		return nil
	}
	w.have[s.ID] = true
	w.emit(s.ID, s.Body)
	return nil
}

// rewrite returns the body of a known section as the metered module has
// it: the refill type, import and fuel global added, function indices
// shifted past the import, the code metered.
func (w *writer) rewrite(r *wasmbin.Reader, s wasmbin.Section) ([]byte, error) {
	m := w.m
	switch s.ID {
	case secType:
		n := r.U32()
		return appendRefillType(wasmbin.AppendU32(nil, n+1), s.Body[r.Off:]...), nil
	case secImport:
		n := r.U32()
		return appendRefillImport(wasmbin.AppendU32(nil, n+1), m.types, s.Body[r.Off:]...), nil
	case secGlobal:
		return rewriteGlobals(r, m)
	case secExport:
		return rewriteExports(r, m)
	case secStart:
		f := r.U32()
		if r.Err == nil && f >= m.funcs {
			return nil, fmt.Errorf("meter: start function %d of %d: %w", f, m.funcs, ErrMalformed)
		}
		return wasmbin.AppendU32(nil, m.shift(f)), nil
	case secElement:
		return rewriteElements(r, m)
	case secCode:
		// the fuel global follows every other; the refill import is the
		// first function after the imported ones
		return rewriteCode(r, m, m.globals, m.impFuncs)
	}
	return s.Body, nil
}

// shift is the index of function f once the refill import is added.
func (m *module) shift(f uint32) uint32 {
	if f >= m.impFuncs {
		return f + 1
	}
	return f
}

// appendRefillType appends the rest of a type section and then () -> i64.
func appendRefillType(b []byte, rest ...byte) []byte {
	b = append(b, rest...)
	return append(b, 0x60, 0x00, 0x01, 0x7e)
}

// appendRefillImport appends the rest of an import section and then the
// refill import of type t.
func appendRefillImport(b []byte, t uint32, rest ...byte) []byte {
	b = append(b, rest...)
	b = wasmbin.AppendName(b, ImportModule)
	b = wasmbin.AppendName(b, ImportName)
	b = append(b, 0x00)
	return wasmbin.AppendU32(b, t)
}

// appendFuel appends the fuel global: mutable i64, 0 (so that the first
// check asks the host).
func appendFuel(b []byte) []byte { return append(b, 0x7e, 0x01, 0x42, 0x00, 0x0b) }

func readTypes(r *wasmbin.Reader) ([]uint32, error) {
	n := r.U32()
	var params []uint32
	for i := uint32(0); i < n && r.Err == nil; i++ {
		switch form := r.Byte(); form {
		case 0x60:
		case 0x4e, 0x4f, 0x50, 0x5e, 0x5f:
			return nil, fmt.Errorf("meter: type %d: form 0x%02x (GC): %w", i, form, ErrUnsupported)
		default:
			if r.Err == nil {
				return nil, fmt.Errorf("meter: type %d: form 0x%02x: %w", i, form, ErrMalformed)
			}
		}
		for k := 0; k < 2; k++ { // params, results
			c := r.U32()
			if k == 0 {
				params = append(params, c)
			}
			for j := uint32(0); j < c && r.Err == nil; j++ {
				if err := valType(r); err != nil {
					return nil, fmt.Errorf("meter: type %d: %w", i, err)
				}
			}
		}
	}
	return params, nil
}

// valType reads one value type.
func valType(r *wasmbin.Reader) error {
	switch t := r.Byte(); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return nil
	case 0x64, 0x63:
		return fmt.Errorf("typed reference 0x%02x: %w", t, ErrUnsupported)
	case 0x69, 0x74:
		return fmt.Errorf("value type 0x%02x (exception handling): %w", t, ErrUnsupported)
	case 0x65, 0x66, 0x67, 0x68, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x71, 0x72, 0x73:
		return fmt.Errorf("value type 0x%02x (GC): %w", t, ErrUnsupported)
	default:
		if r.Err != nil {
			return r.Err
		}
		return fmt.Errorf("value type 0x%02x: %w", t, ErrMalformed)
	}
}

func readImports(r *wasmbin.Reader, m *module) error {
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		mod := r.Name()
		r.Name()
		if r.Err == nil && mod == ImportModule {
			return fmt.Errorf("meter: import %d from %q: %w", i, mod, ErrReserved)
		}
		switch kind := r.Byte(); kind {
		case 0:
			if t := r.U32(); r.Err == nil && t >= m.types {
				return fmt.Errorf("meter: import %d has type %d of %d: %w", i, t, m.types, ErrMalformed)
			}
			m.impFuncs++
		case 1:
			if err := valType(r); err != nil {
				return fmt.Errorf("meter: import %d: %w", i, err)
			}
			r.Limits()
		case 2:
			r.Limits()
		case 3:
			if err := valType(r); err != nil {
				return fmt.Errorf("meter: import %d: %w", i, err)
			}
			r.Byte()
			m.globals++
		case 4:
			return fmt.Errorf("meter: import %d is a tag (exception handling): %w", i, ErrUnsupported)
		default:
			if r.Err == nil {
				return fmt.Errorf("meter: import %d of kind %d: %w", i, kind, ErrMalformed)
			}
		}
	}
	return nil
}

func rewriteGlobals(r *wasmbin.Reader, m *module) ([]byte, error) {
	n := r.U32()
	b := wasmbin.AppendU32(nil, n+1)
	for i := uint32(0); i < n && r.Err == nil; i++ {
		start := r.Off
		if err := valType(r); err != nil {
			return nil, fmt.Errorf("meter: global %d: %w", i, err)
		}
		r.Byte()
		b = append(b, r.B[start:r.Off]...)
		var err error
		if b, err = constExpr(r, m, b); err != nil {
			return nil, fmt.Errorf("meter: global %d: %w", i, err)
		}
	}
	return appendFuel(b), nil
}

func rewriteExports(r *wasmbin.Reader, m *module) ([]byte, error) {
	n := r.U32()
	b := wasmbin.AppendU32(nil, n)
	for i := uint32(0); i < n && r.Err == nil; i++ {
		b = wasmbin.AppendName(b, r.Name())
		kind := r.Byte()
		idx := r.U32()
		if r.Err != nil {
			break
		}
		switch {
		case kind == 0 && idx >= m.funcs:
			return nil, fmt.Errorf("meter: export %d names function %d of %d: %w", i, idx, m.funcs, ErrMalformed)
		case kind == 0:
			idx = m.shift(idx)
		case kind == 3 && idx >= m.globals:
			return nil, fmt.Errorf("meter: export %d names global %d of %d: %w", i, idx, m.globals, ErrMalformed)
		case kind == 4:
			return nil, fmt.Errorf("meter: export %d is a tag (exception handling): %w", i, ErrUnsupported)
		case kind > 4:
			return nil, fmt.Errorf("meter: export %d of kind %d: %w", i, kind, ErrMalformed)
		}
		b = append(b, kind)
		b = wasmbin.AppendU32(b, idx)
	}
	return b, nil
}

func rewriteElements(r *wasmbin.Reader, m *module) ([]byte, error) {
	n := r.U32()
	b := wasmbin.AppendU32(nil, n)
	for i := uint32(0); i < n && r.Err == nil; i++ {
		flags := r.U32()
		if r.Err != nil {
			break
		}
		if flags > 7 {
			return nil, fmt.Errorf("meter: element segment %d has flags %d: %w", i, flags, ErrMalformed)
		}
		b = wasmbin.AppendU32(b, flags)
		var err error
		if flags&3 == 2 { // explicit table index
			b = wasmbin.AppendU32(b, r.U32())
		}
		if flags&1 == 0 { // active: an offset
			if b, err = constExpr(r, m, b); err != nil {
				return nil, fmt.Errorf("meter: element segment %d: %w", i, err)
			}
		}
		if flags&3 != 0 { // an element kind or reference type
			b = append(b, r.Byte())
		}
		c := r.U32()
		b = wasmbin.AppendU32(b, c)
		for j := uint32(0); j < c && r.Err == nil; j++ {
			if flags&4 != 0 {
				if b, err = constExpr(r, m, b); err != nil {
					return nil, fmt.Errorf("meter: element segment %d: %w", i, err)
				}
				continue
			}
			f := r.U32()
			if r.Err == nil && f >= m.funcs {
				return nil, fmt.Errorf("meter: element segment %d names function %d of %d: %w", i, f, m.funcs, ErrMalformed)
			}
			b = wasmbin.AppendU32(b, m.shift(f))
		}
	}
	return b, nil
}

// constExpr appends a constant expression up to its end, with its function
// indices shifted.
func constExpr(r *wasmbin.Reader, m *module, b []byte) ([]byte, error) {
	var d decoder
	d.m = m
	d.r = r
	for {
		start := r.Off
		op, err := d.next()
		if err != nil {
			return nil, err
		}
		if d.fn >= 0 {
			b = append(b, op)
			b = wasmbin.AppendU32(b, m.shift(uint32(d.fn)))
		} else {
			b = append(b, r.B[start:r.Off]...)
		}
		if op == 0x0b {
			return b, nil
		}
	}
}

// check is the fuel check inserted at a function's entry and a loop header.
func appendCheck(b []byte, fuel, refill uint32, cost int64) []byte {
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x42)
	b = wasmbin.AppendS64(b, cost)
	b = append(b, 0x7d, 0x24) // i64.sub; global.set
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x10) // i64.const 0; i64.lt_s; if; call
	b = wasmbin.AppendU32(b, refill)
	b = append(b, 0x24)
	b = wasmbin.AppendU32(b, fuel)
	return append(b, 0x0b)
}

// loopStride is how many passes of its costliest loop a function's
// counter holds: the counter is a local, which stays in a register where
// the fuel global is a load and a store, and Go's wasm code passes a loop
// header at nearly every branch.
const loopStride = 32

// maxPrepay caps what a function's counter holds, so that one check never
// charges more than maxPrepay plus the loop's own cost; Quantum is four
// times it.
const maxPrepay = 1 << 12

// Quantum is the fuel the host should hand out per refill: at least as
// much as the largest single charge of a loop whose body costs at most
// maxPrepay, so that such a loop asks the host at most once per quantum.
// It also sets how long a collection can wait for a looping guest: at
// 1<<16 a tight Go loop came back to Go every ~3 ms (a 3.3 ms GC pause
// beside it), at 1<<14 every ~0.4 ms (BenchmarkGCPause; docs/BENCHMARKS.md).
const Quantum = 1 << 14

// appendLoopCheck is the check inserted at a loop header: the pass costs
// cost of the function's counter; when the counter goes below zero, the
// fuel is charged for what the counter ran over plus a prepayment of
// prepay, and the counter is set to prepay. Every pass is so paid for
// before it runs: a function whose counter holds prepayment when it
// returns was only overcharged.
func appendLoopCheck(b []byte, counter, fuel, refill uint32, cost, prepay int64) []byte {
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, counter)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, cost)
	b = append(b, 0x6b, 0x22) // i32.sub; local.tee
	b = wasmbin.AppendU32(b, counter)
	b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40, 0x23) // i32.const 0; i32.lt_s; if; global.get
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x42)
	b = wasmbin.AppendS64(b, prepay)
	b = append(b, 0x20) // local.get
	b = wasmbin.AppendU32(b, counter)
	b = append(b, 0xac, 0x7d, 0x7d, 0x24) // i64.extend_i32_s; i64.sub; i64.sub; global.set
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, prepay)
	b = append(b, 0x21) // local.set
	b = wasmbin.AppendU32(b, counter)
	b = appendRefillIfSpent(b, fuel, refill)
	return append(b, 0x0b)
}

// appendCharge subtracts cost from the counter, unchecked: it comes right
// before a loop header, which checks it.
func appendCharge(b []byte, counter uint32, cost int64) []byte {
	b = append(b, 0x20)
	b = wasmbin.AppendU32(b, counter)
	b = append(b, 0x41)
	b = wasmbin.AppendS64(b, cost)
	b = append(b, 0x6b, 0x21) // i32.sub; local.set
	return wasmbin.AppendU32(b, counter)
}

// appendBulkCharge charges the length on top of the stack (an i32, left
// there) to the fuel, and asks for more if that spent it.
func appendBulkCharge(b []byte, scratch, fuel, refill uint32) []byte {
	b = append(b, 0x22) // local.tee
	b = wasmbin.AppendU32(b, scratch)
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x20) // local.get
	b = wasmbin.AppendU32(b, scratch)
	b = append(b, 0xad, 0x7d, 0x24) // i64.extend_i32_u; i64.sub; global.set
	b = wasmbin.AppendU32(b, fuel)
	return appendRefillIfSpent(b, fuel, refill)
}

// appendRefillIfSpent appends: if fuel < 0, fuel = refill().
func appendRefillIfSpent(b []byte, fuel, refill uint32) []byte {
	b = append(b, 0x23)
	b = wasmbin.AppendU32(b, fuel)
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x10) // i64.const 0; i64.lt_s; if; call
	b = wasmbin.AppendU32(b, refill)
	b = append(b, 0x24)
	b = wasmbin.AppendU32(b, fuel)
	return append(b, 0x0b)
}

// editKind says what an edit inserts or replaces.
type editKind uint8

const (
	editEntry  editKind = iota // the fuel check at a function's entry
	editCharge                 // the counter charged before a loop
	editLoop                   // the check at a loop header
	editBulk                   // a bulk op's length charged
	editFunc                   // a function index replaced
)

// edit is a change at one place of a body: code inserted at pos, or the
// function index between pos and end replaced.
type edit struct {
	pos, end int
	kind     editKind
	region   int    // the region whose cost a check or charge is
	fn       uint32 // the new index
}

// bodyInfo is what scanBody learns of a body.
type bodyInfo struct {
	groups    uint32 // local declarations
	groupsEnd int    // where they start (after their count)
	localsEnd int    // where the code starts
	locals    uint32
	extra     bool    // it needs the counter and the scratch local
	regions   []int64 // cost per region: 0 the function's, then one per loop
}

func rewriteCode(r *wasmbin.Reader, m *module, fuel, refill uint32) ([]byte, error) {
	n := r.U32()
	b := wasmbin.AppendU32(make([]byte, 0, len(r.B)+len(r.B)/4), n)
	var edits []edit
	var body []byte
	var info bodyInfo
	for i := uint32(0); i < n && r.Err == nil; i++ {
		size := r.U32()
		code := r.Bytes(size)
		if r.Err != nil {
			break
		}
		if int(i) >= len(m.funcTypes) {
			return nil, fmt.Errorf("meter: code of function %d without a type: %w", m.impFuncs+i, ErrMalformed)
		}
		var err error
		info.regions = info.regions[:0]
		if edits, err = scanBody(code, m, m.params[m.funcTypes[i]], edits[:0], &info); err != nil {
			return nil, fmt.Errorf("meter: code of function %d: %w", m.impFuncs+i, err)
		}
		body = body[:0]
		last := 0
		var counter, scratch uint32
		var prepay int64
		if info.extra {
			// the loops' counter and the bulk ops' scratch: two more
			// locals, after the others
			counter = m.params[m.funcTypes[i]] + info.locals
			scratch = counter + 1
			body = wasmbin.AppendU32(body, info.groups+1)
			body = append(body, code[info.groupsEnd:info.localsEnd]...)
			body = append(body, 0x02, 0x7f)
			last = info.localsEnd
			var most int64
			for _, c := range info.regions[1:] {
				most = max(most, c)
			}
			prepay = min(loopStride*most, maxPrepay)
		}
		for _, e := range edits {
			body = append(body, code[last:e.pos]...)
			last = e.pos
			switch e.kind {
			case editEntry:
				body = appendCheck(body, fuel, refill, info.regions[0])
			case editCharge:
				body = appendCharge(body, counter, info.regions[e.region])
			case editLoop:
				body = appendLoopCheck(body, counter, fuel, refill, info.regions[e.region], prepay)
			case editBulk:
				body = appendBulkCharge(body, scratch, fuel, refill)
			case editFunc:
				body = wasmbin.AppendU32(body, e.fn)
				last = e.end
			}
		}
		body = append(body, code[last:]...)
		b = wasmbin.AppendU32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b, nil
}

// maxLocals caps a function's locals (wazero's own limit is higher; no
// compiler comes near this).
const maxLocals = 50000

// scanBody decodes one function body and returns its edits in order: a
// check after the locals, a charge before every loop and a check after its
// block type, a charge before every bulk op, and every function index to
// shift. It sets info.regions to the cost of each region: the function's
// instructions outside its loops, and each loop's instructions outside its
// nested loops.
//
// A region's cost bounds the work of one pass through it. Within a region
// control only moves forward: a branch to a block or an if goes forward,
// and a branch to a loop reaches that loop's header, which is a check; so
// a pass runs each instruction of the region at most once. A call runs the
// callee's own checks. A pass can enter a nested loop, whose header
// checks, and leave it for the rest of the region: so the charge before
// each loop pays for the enclosing region once more. A pass ends at a
// branch to its header, which charges the next pass; at a branch out of
// the loop, into the enclosing region, paid for by the charge before the
// loop; or at a return.
func scanBody(code []byte, m *module, params uint32, edits []edit, info *bodyInfo) ([]edit, error) {
	r := &wasmbin.Reader{B: code}
	groups := r.U32()
	info.groups, info.groupsEnd = groups, r.Off
	locals := uint64(0)
	for g := uint32(0); g < groups && r.Err == nil; g++ {
		locals += uint64(r.U32())
		if err := valType(r); err != nil {
			return nil, err
		}
		if locals > maxLocals {
			return nil, fmt.Errorf("%d locals: %w", locals, ErrMalformed)
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	info.localsEnd, info.locals = r.Off, uint32(locals)
	info.extra = false
	info.regions = append(info.regions, 0)
	edits = append(edits, edit{pos: r.Off, kind: editEntry})
	d := decoder{m: m, r: r, locals: params + uint32(locals)}
	// frames holds, per open block, the region it counts in
	frames := []int{0}
	for len(frames) > 0 {
		start := r.Off
		op, err := d.next()
		if err != nil {
			return nil, err
		}
		cur := frames[len(frames)-1]
		info.regions[cur]++
		switch {
		case d.fn >= 0:
			edits = append(edits, edit{pos: d.fnPos, end: r.Off, kind: editFunc, fn: m.shift(uint32(d.fn))})
		case d.bulk:
			edits = append(edits, edit{pos: start, kind: editBulk})
			info.extra = true
		}
		switch op {
		case 0x02, 0x04:
			frames = append(frames, cur)
		case 0x03:
			info.regions = append(info.regions, 0)
			loop := len(info.regions) - 1
			edits = append(edits, edit{pos: start, kind: editCharge, region: cur},
				edit{pos: r.Off, kind: editLoop, region: loop})
			frames = append(frames, loop)
			info.extra = true
		case 0x0b:
			frames = frames[:len(frames)-1]
		}
	}
	if r.Off != len(code) {
		return nil, fmt.Errorf("%d bytes after the body's end: %w", len(code)-r.Off, ErrMalformed)
	}
	return edits, nil
}
