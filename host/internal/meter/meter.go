package meter

import (
	"bytes"
	"fmt"
	"strings"
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
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secDataCnt  = 12
	secTag      = 13
)

// order is the position a known section must take in a module.
func order(id byte) int {
	switch id {
	case secTag: // between memory and global
		return 55
	case secDataCnt: // between element and code
		return 95
	}
	return int(id) * 10
}

type section struct {
	id   byte
	body []byte
}

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
// deterministic: the same input gives the same output.
func Instrument(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, fmt.Errorf("meter: not a wasm 1 module: %w", ErrMalformed)
	}
	r := &reader{b: bin, off: 8}
	var secs []section
	seen := map[byte]bool{}
	for r.off < len(bin) && r.err == nil {
		id := r.byte()
		body := r.bytes(r.u32())
		if r.err != nil {
			break
		}
		if id > secTag {
			return nil, fmt.Errorf("meter: unknown section %d: %w", id, ErrMalformed)
		}
		if id != secCustom {
			if seen[id] {
				return nil, fmt.Errorf("meter: section %d twice: %w", id, ErrMalformed)
			}
			seen[id] = true
		}
		if id == secTag {
			return nil, fmt.Errorf("meter: tag section (exception handling): %w", ErrUnsupported)
		}
		secs = append(secs, section{id, body})
	}
	if r.err != nil {
		return nil, fmt.Errorf("meter: section headers: %w", r.err)
	}

	var m module
	var defFuncs uint32
	var codeBodies uint32
	for _, s := range secs {
		r := &reader{b: s.body}
		var err error
		switch s.id {
		case secType:
			m.params, err = readTypes(r)
			m.types = uint32(len(m.params))
		case secImport:
			err = readImports(r, &m)
		case secFunction:
			defFuncs = r.u32()
			for i := uint32(0); i < defFuncs && r.err == nil; i++ {
				t := r.u32()
				if r.err == nil && t >= m.types {
					err = fmt.Errorf("meter: function %d has type %d of %d: %w", i, t, m.types, ErrMalformed)
					break
				}
				m.funcTypes = append(m.funcTypes, t)
			}
		case secGlobal:
			m.defGlobals = r.u32()
		case secCode:
			codeBodies = r.u32()
		case secTable, secMemory, secData:
			// copied unread, but a count no bytes back is refused here:
			// wazero's decoder allocates for it before it reads on
			if n := r.u32(); r.err == nil && uint64(n) > uint64(len(s.body)) {
				err = fmt.Errorf("meter: section %d counts %d entries in %d bytes: %w", s.id, n, len(s.body), ErrMalformed)
			}
		}
		if err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, fmt.Errorf("meter: section %d: %w", s.id, r.err)
		}
	}
	if codeBodies != defFuncs {
		return nil, fmt.Errorf("meter: %d bodies for %d functions: %w", codeBodies, defFuncs, ErrMalformed)
	}
	m.funcs = m.impFuncs + defFuncs
	m.globals += m.defGlobals
	fuel := m.globals    // the fuel global's index
	refill := m.impFuncs // the refill import's index

	out := append(make([]byte, 0, len(bin)+len(bin)/4), bin[:8]...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	have := map[byte]bool{}
	// missing emits the sections the rewriter adds to a module that has
	// none of them, before the first section that must follow them.
	missing := func(next int) {
		if !have[secType] && next > order(secType) {
			emit(secType, appendRefillType(appendU32(nil, 1)))
			have[secType] = true
		}
		if !have[secImport] && next > order(secImport) {
			emit(secImport, appendRefillImport(appendU32(nil, 1), m.types))
			have[secImport] = true
		}
		if !have[secGlobal] && next > order(secGlobal) {
			emit(secGlobal, appendFuel(appendU32(nil, 1)))
			have[secGlobal] = true
		}
	}
	for _, s := range secs {
		if s.id != secCustom {
			missing(order(s.id))
		}
		r := &reader{b: s.body}
		var body []byte
		var err error
		switch s.id {
		case secCustom:
			name := r.name()
			switch {
			case r.err != nil:
				return nil, fmt.Errorf("meter: custom section: %w", r.err)
			case strings.HasPrefix(name, ".debug_"):
				continue // code offsets moved: drop DWARF rather than mislead
			case name == "name":
				if nb, ok := shiftNames(s.body[r.off:], m.impFuncs); ok {
					emit(secCustom, append(appendName(nil, name), nb...))
				}
				continue
			}
			body = s.body
		case secType:
			n := r.u32()
			body = appendRefillType(appendU32(nil, n+1), s.body[r.off:]...)
		case secImport:
			n := r.u32()
			body = appendRefillImport(appendU32(nil, n+1), m.types, s.body[r.off:]...)
		case secGlobal:
			body, err = rewriteGlobals(r, &m)
		case secExport:
			body, err = rewriteExports(r, &m)
		case secStart:
			f := r.u32()
			if r.err == nil && f >= m.funcs {
				err = fmt.Errorf("meter: start function %d of %d: %w", f, m.funcs, ErrMalformed)
			}
			body = appendU32(nil, m.shift(f))
		case secElement:
			body, err = rewriteElements(r, &m)
		case secCode:
			body, err = rewriteCode(r, &m, fuel, refill)
		default:
			body = s.body
		}
		if err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, fmt.Errorf("meter: section %d: %w", s.id, r.err)
		}
		switch s.id {
		case secGlobal, secExport, secStart, secElement, secCode:
			// rewritten from what was read: bytes after it would be lost
			if r.off != len(s.body) {
				return nil, fmt.Errorf("meter: section %d: %d bytes after its entries: %w", s.id, len(s.body)-r.off, ErrMalformed)
			}
		}
		have[s.id] = true
		emit(s.id, body)
	}
	missing(1 << 30)
	return out, nil
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
	b = appendName(b, ImportModule)
	b = appendName(b, ImportName)
	b = append(b, 0x00)
	return appendU32(b, t)
}

// appendFuel appends the fuel global: mutable i64, 0 (so that the first
// check asks the host).
func appendFuel(b []byte) []byte { return append(b, 0x7e, 0x01, 0x42, 0x00, 0x0b) }

func readTypes(r *reader) ([]uint32, error) {
	n := r.u32()
	var params []uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch form := r.byte(); form {
		case 0x60:
		case 0x4e, 0x4f, 0x50, 0x5e, 0x5f:
			return nil, fmt.Errorf("meter: type %d: form 0x%02x (GC): %w", i, form, ErrUnsupported)
		default:
			if r.err == nil {
				return nil, fmt.Errorf("meter: type %d: form 0x%02x: %w", i, form, ErrMalformed)
			}
		}
		for k := 0; k < 2; k++ { // params, results
			c := r.u32()
			if k == 0 {
				params = append(params, c)
			}
			for j := uint32(0); j < c && r.err == nil; j++ {
				if err := valType(r); err != nil {
					return nil, fmt.Errorf("meter: type %d: %w", i, err)
				}
			}
		}
	}
	return params, nil
}

// valType reads one value type.
func valType(r *reader) error {
	switch t := r.byte(); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return nil
	case 0x64, 0x63:
		return fmt.Errorf("typed reference 0x%02x: %w", t, ErrUnsupported)
	case 0x69, 0x74:
		return fmt.Errorf("value type 0x%02x (exception handling): %w", t, ErrUnsupported)
	case 0x65, 0x66, 0x67, 0x68, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x71, 0x72, 0x73:
		return fmt.Errorf("value type 0x%02x (GC): %w", t, ErrUnsupported)
	default:
		if r.err != nil {
			return r.err
		}
		return fmt.Errorf("value type 0x%02x: %w", t, ErrMalformed)
	}
}

func readImports(r *reader, m *module) error {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		mod := r.name()
		r.name()
		if r.err == nil && mod == ImportModule {
			return fmt.Errorf("meter: import %d from %q: %w", i, mod, ErrReserved)
		}
		switch kind := r.byte(); kind {
		case 0:
			if t := r.u32(); r.err == nil && t >= m.types {
				return fmt.Errorf("meter: import %d has type %d of %d: %w", i, t, m.types, ErrMalformed)
			}
			m.impFuncs++
		case 1:
			if err := valType(r); err != nil {
				return fmt.Errorf("meter: import %d: %w", i, err)
			}
			limits(r)
		case 2:
			limits(r)
		case 3:
			if err := valType(r); err != nil {
				return fmt.Errorf("meter: import %d: %w", i, err)
			}
			r.byte()
			m.globals++
		case 4:
			return fmt.Errorf("meter: import %d is a tag (exception handling): %w", i, ErrUnsupported)
		default:
			if r.err == nil {
				return fmt.Errorf("meter: import %d of kind %d: %w", i, kind, ErrMalformed)
			}
		}
	}
	return nil
}

func limits(r *reader) {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func rewriteGlobals(r *reader, m *module) ([]byte, error) {
	n := r.u32()
	b := appendU32(nil, n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.off
		if err := valType(r); err != nil {
			return nil, fmt.Errorf("meter: global %d: %w", i, err)
		}
		r.byte()
		b = append(b, r.b[start:r.off]...)
		var err error
		if b, err = constExpr(r, m, b); err != nil {
			return nil, fmt.Errorf("meter: global %d: %w", i, err)
		}
	}
	return appendFuel(b), nil
}

func rewriteExports(r *reader, m *module) ([]byte, error) {
	n := r.u32()
	b := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		b = appendName(b, r.name())
		kind := r.byte()
		idx := r.u32()
		if r.err != nil {
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
		b = appendU32(b, idx)
	}
	return b, nil
}

func rewriteElements(r *reader, m *module) ([]byte, error) {
	n := r.u32()
	b := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if r.err != nil {
			break
		}
		if flags > 7 {
			return nil, fmt.Errorf("meter: element segment %d has flags %d: %w", i, flags, ErrMalformed)
		}
		b = appendU32(b, flags)
		var err error
		if flags&3 == 2 { // explicit table index
			b = appendU32(b, r.u32())
		}
		if flags&1 == 0 { // active: an offset
			if b, err = constExpr(r, m, b); err != nil {
				return nil, fmt.Errorf("meter: element segment %d: %w", i, err)
			}
		}
		if flags&3 != 0 { // an element kind or reference type
			b = append(b, r.byte())
		}
		c := r.u32()
		b = appendU32(b, c)
		for j := uint32(0); j < c && r.err == nil; j++ {
			if flags&4 != 0 {
				if b, err = constExpr(r, m, b); err != nil {
					return nil, fmt.Errorf("meter: element segment %d: %w", i, err)
				}
				continue
			}
			f := r.u32()
			if r.err == nil && f >= m.funcs {
				return nil, fmt.Errorf("meter: element segment %d names function %d of %d: %w", i, f, m.funcs, ErrMalformed)
			}
			b = appendU32(b, m.shift(f))
		}
	}
	return b, nil
}

// constExpr appends a constant expression up to its end, with its function
// indices shifted.
func constExpr(r *reader, m *module, b []byte) ([]byte, error) {
	var d decoder
	d.m = m
	d.r = r
	for {
		start := r.off
		op, err := d.next()
		if err != nil {
			return nil, err
		}
		if d.fn >= 0 {
			b = append(b, op)
			b = appendU32(b, m.shift(uint32(d.fn)))
		} else {
			b = append(b, r.b[start:r.off]...)
		}
		if op == 0x0b {
			return b, nil
		}
	}
}

// check is the fuel check inserted at a function's entry and a loop header.
func appendCheck(b []byte, fuel, refill uint32, cost int64) []byte {
	b = append(b, 0x23)
	b = appendU32(b, fuel)
	b = append(b, 0x42)
	b = appendS64(b, cost)
	b = append(b, 0x7d, 0x24) // i64.sub; global.set
	b = appendU32(b, fuel)
	b = append(b, 0x23)
	b = appendU32(b, fuel)
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x10) // i64.const 0; i64.lt_s; if; call
	b = appendU32(b, refill)
	b = append(b, 0x24)
	b = appendU32(b, fuel)
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
	b = appendU32(b, counter)
	b = append(b, 0x41)
	b = appendS64(b, cost)
	b = append(b, 0x6b, 0x22) // i32.sub; local.tee
	b = appendU32(b, counter)
	b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40, 0x23) // i32.const 0; i32.lt_s; if; global.get
	b = appendU32(b, fuel)
	b = append(b, 0x42)
	b = appendS64(b, prepay)
	b = append(b, 0x20) // local.get
	b = appendU32(b, counter)
	b = append(b, 0xac, 0x7d, 0x7d, 0x24) // i64.extend_i32_s; i64.sub; i64.sub; global.set
	b = appendU32(b, fuel)
	b = append(b, 0x41)
	b = appendS64(b, prepay)
	b = append(b, 0x21) // local.set
	b = appendU32(b, counter)
	b = appendRefillIfSpent(b, fuel, refill)
	return append(b, 0x0b)
}

// appendCharge subtracts cost from the counter, unchecked: it comes right
// before a loop header, which checks it.
func appendCharge(b []byte, counter uint32, cost int64) []byte {
	b = append(b, 0x20)
	b = appendU32(b, counter)
	b = append(b, 0x41)
	b = appendS64(b, cost)
	b = append(b, 0x6b, 0x21) // i32.sub; local.set
	return appendU32(b, counter)
}

// appendBulkCharge charges the length on top of the stack (an i32, left
// there) to the fuel, and asks for more if that spent it.
func appendBulkCharge(b []byte, scratch, fuel, refill uint32) []byte {
	b = append(b, 0x22) // local.tee
	b = appendU32(b, scratch)
	b = append(b, 0x23)
	b = appendU32(b, fuel)
	b = append(b, 0x20) // local.get
	b = appendU32(b, scratch)
	b = append(b, 0xad, 0x7d, 0x24) // i64.extend_i32_u; i64.sub; global.set
	b = appendU32(b, fuel)
	return appendRefillIfSpent(b, fuel, refill)
}

// appendRefillIfSpent appends: if fuel < 0, fuel = refill().
func appendRefillIfSpent(b []byte, fuel, refill uint32) []byte {
	b = append(b, 0x23)
	b = appendU32(b, fuel)
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x10) // i64.const 0; i64.lt_s; if; call
	b = appendU32(b, refill)
	b = append(b, 0x24)
	b = appendU32(b, fuel)
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

func rewriteCode(r *reader, m *module, fuel, refill uint32) ([]byte, error) {
	n := r.u32()
	b := appendU32(make([]byte, 0, len(r.b)+len(r.b)/4), n)
	var edits []edit
	var body []byte
	var info bodyInfo
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		code := r.bytes(size)
		if r.err != nil {
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
			body = appendU32(body, info.groups+1)
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
				body = appendU32(body, e.fn)
				last = e.end
			}
		}
		body = append(body, code[last:]...)
		b = appendU32(b, uint32(len(body)))
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
	r := &reader{b: code}
	groups := r.u32()
	info.groups, info.groupsEnd = groups, r.off
	locals := uint64(0)
	for g := uint32(0); g < groups && r.err == nil; g++ {
		locals += uint64(r.u32())
		if err := valType(r); err != nil {
			return nil, err
		}
		if locals > maxLocals {
			return nil, fmt.Errorf("%d locals: %w", locals, ErrMalformed)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	info.localsEnd, info.locals = r.off, uint32(locals)
	info.extra = false
	info.regions = append(info.regions, 0)
	edits = append(edits, edit{pos: r.off, kind: editEntry})
	d := decoder{m: m, r: r, locals: params + uint32(locals)}
	// frames holds, per open block, the region it counts in
	frames := []int{0}
	for len(frames) > 0 {
		start := r.off
		op, err := d.next()
		if err != nil {
			return nil, err
		}
		cur := frames[len(frames)-1]
		info.regions[cur]++
		switch {
		case d.fn >= 0:
			edits = append(edits, edit{pos: d.fnPos, end: r.off, kind: editFunc, fn: m.shift(uint32(d.fn))})
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
				edit{pos: r.off, kind: editLoop, region: loop})
			frames = append(frames, loop)
			info.extra = true
		case 0x0b:
			frames = frames[:len(frames)-1]
		}
	}
	if r.off != len(code) {
		return nil, fmt.Errorf("%d bytes after the body's end: %w", len(code)-r.off, ErrMalformed)
	}
	return edits, nil
}
