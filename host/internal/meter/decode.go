package meter

import (
	"fmt"

	"github.com/agentwarden/warden/host/internal/wasmbin"
)

// decoder reads one instruction at a time and checks the indices the
// rewriter must keep the guest from reaching.
//
// The rewrite adds one entry to four index spaces, and the decoder refuses
// any index into them at or past the original module's count, since after
// the rewrite such an index would name what the rewrite added: locals (the
// loop counter and the scratch local follow the function's own), functions
// (the refill import), globals (the fuel) and types (refill's type). It
// adds nothing to the others, so an index past the original's count stays
// past it in the output and wazero's validation refuses it: labels (every
// inserted block is closed before the original code resumes, so no label
// depth changes), tables, memories (wazero runs one), data segments and
// element segments.
type decoder struct {
	m      *module
	r      *wasmbin.Reader
	locals uint32 // the current function's parameters and locals
	fn     int64  // the function index of a call or ref.func, or -1
	fnPos  int    // where that index starts
	bulk   bool   // the instruction is a bulk memory or table op with a length operand
}

// next decodes one instruction and returns its opcode.
func (d *decoder) next() (byte, error) {
	r := d.r
	d.fn = -1
	d.bulk = false
	op := r.Byte()
	if r.Err != nil {
		return 0, r.Err
	}
	switch {
	case op <= 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x1a || op == 0x1b ||
		op >= 0x45 && op <= 0xc4 || op == 0xd1:
		// no immediate
	case op >= 0x02 && op <= 0x04:
		if err := d.blockType(); err != nil {
			return 0, err
		}
	case op == 0x0c || op == 0x0d || op == 0x25 || op == 0x26:
		r.U32()
	case op >= 0x20 && op <= 0x22:
		if l := r.U32(); r.Err == nil && l >= d.locals {
			return 0, fmt.Errorf("local %d of %d: %w", l, d.locals, ErrMalformed)
		}
	case op == 0x0e:
		n := r.U32()
		for i := uint32(0); i <= n && r.Err == nil; i++ {
			r.U32()
		}
	case op == 0x10 || op == 0xd2:
		d.fnPos = r.Off
		f := r.U32()
		if r.Err == nil && f >= d.m.funcs {
			return 0, fmt.Errorf("function %d of %d: %w", f, d.m.funcs, ErrMalformed)
		}
		d.fn = int64(f)
	case op == 0x11:
		if t := r.U32(); r.Err == nil && t >= d.m.types {
			return 0, fmt.Errorf("call_indirect type %d of %d: %w", t, d.m.types, ErrMalformed)
		}
		r.U32()
	case op == 0x1c:
		n := r.U32()
		for i := uint32(0); i < n && r.Err == nil; i++ {
			if err := valType(r); err != nil {
				return 0, err
			}
		}
	case op == 0x23 || op == 0x24:
		if g := r.U32(); r.Err == nil && g >= d.m.globals {
			return 0, fmt.Errorf("global %d of %d: %w", g, d.m.globals, ErrMalformed)
		}
	case op >= 0x28 && op <= 0x3e:
		if err := d.memarg(); err != nil {
			return 0, err
		}
	case op == 0x3f || op == 0x40:
		d.memory()
	case op == 0x41:
		r.LEB(32, true)
	case op == 0x42:
		r.LEB(64, true)
	case op == 0x43:
		r.Bytes(4)
	case op == 0x44:
		r.Bytes(8)
	case op == 0xd0:
		switch t := r.Byte(); {
		case r.Err != nil:
		case t != 0x70 && t != 0x6f:
			return 0, fmt.Errorf("ref.null of heap type 0x%02x: %w", t, ErrUnsupported)
		}
	case op == 0xfc:
		if err := d.misc(); err != nil {
			return 0, err
		}
	case op == 0xfd:
		if err := d.simd(); err != nil {
			return 0, err
		}
	case op == 0xfe:
		if err := d.atomic(); err != nil {
			return 0, err
		}
	case op >= 0x06 && op <= 0x0a || op == 0x18 || op == 0x19 || op == 0x1f:
		return 0, fmt.Errorf("opcode 0x%02x (exception handling): %w", op, ErrUnsupported)
	case op == 0x12 || op == 0x13:
		return 0, fmt.Errorf("opcode 0x%02x (tail call): %w", op, ErrUnsupported)
	case op == 0x14 || op == 0x15 || op >= 0xd3 && op <= 0xd6 || op == 0xfb:
		return 0, fmt.Errorf("opcode 0x%02x (typed references or GC): %w", op, ErrUnsupported)
	default:
		return 0, fmt.Errorf("opcode 0x%02x: %w", op, ErrMalformed)
	}
	if r.Err != nil {
		return 0, r.Err
	}
	return op, nil
}

func (d *decoder) blockType() error {
	r := d.r
	if r.Off < len(r.B) {
		switch c := r.B[r.Off]; c {
		case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
			r.Off++
			return nil
		case 0x64, 0x63:
			return fmt.Errorf("block of a typed reference: %w", ErrUnsupported)
		}
	}
	t := int64(r.LEB(33, true))
	if r.Err != nil {
		return r.Err
	}
	if t < 0 || t >= int64(d.m.types) {
		return fmt.Errorf("block type %d of %d: %w", t, d.m.types, ErrMalformed)
	}
	return nil
}

func (d *decoder) memarg() error {
	align := d.r.U32()
	if align&0x40 != 0 {
		return fmt.Errorf("memarg with a memory index (multiple memories): %w", ErrUnsupported)
	}
	d.r.U32()
	return nil
}

// memory reads a memory index (0: wazero runs one memory).
func (d *decoder) memory() { d.r.U32() }

func (d *decoder) misc() error {
	r := d.r
	sub := r.U32()
	// memory.init, memory.copy, memory.fill, table.init, table.copy and
	// table.fill take a length last, on top of the stack
	d.bulk = sub == 8 || sub == 10 || sub == 11 || sub == 12 || sub == 14 || sub == 17
	switch {
	case r.Err != nil:
	case sub <= 7:
	case sub == 8: // memory.init data memory
		r.U32()
		d.memory()
	case sub == 9 || sub == 13 || sub >= 15 && sub <= 17: // data.drop, elem.drop, table.grow/size/fill
		r.U32()
	case sub == 10: // memory.copy
		d.memory()
		d.memory()
	case sub == 11: // memory.fill
		d.memory()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.U32()
		r.U32()
	default:
		return fmt.Errorf("opcode 0xfc %d: %w", sub, ErrUnsupported)
	}
	return nil
}

func (d *decoder) simd() error {
	r := d.r
	switch sub := r.U32(); {
	case r.Err != nil:
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load zero
		return d.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.Bytes(16)
	case sub >= 21 && sub <= 34: // extract and replace lane
		r.Byte()
	case sub >= 84 && sub <= 91: // load and store lane
		if err := d.memarg(); err != nil {
			return err
		}
		r.Byte()
	case sub <= 255:
	default:
		return fmt.Errorf("opcode 0xfd %d (relaxed SIMD): %w", sub, ErrUnsupported)
	}
	return nil
}

func (d *decoder) atomic() error {
	r := d.r
	switch sub := r.U32(); {
	case r.Err != nil:
	case sub <= 2 || sub >= 0x10 && sub <= 0x4e:
		return d.memarg()
	case sub == 3: // atomic.fence
		r.Byte()
	default:
		return fmt.Errorf("opcode 0xfe %d: %w", sub, ErrMalformed)
	}
	return nil
}

// shiftNames rewrites the body of a "name" section (after its name) for the
// added import: function, local and label names are keyed by function
// index. It reports false for a section it cannot read, which is dropped.
func shiftNames(body []byte, impFuncs uint32) ([]byte, bool) {
	r := &wasmbin.Reader{B: body}
	var out []byte
	shift := func(f uint32) uint32 {
		if f >= impFuncs {
			return f + 1
		}
		return f
	}
	for r.Off < len(body) {
		id := r.Byte()
		sub := r.Bytes(r.U32())
		if r.Err != nil {
			return nil, false
		}
		var nb []byte
		switch id {
		case 1, 2, 3:
			s := &wasmbin.Reader{B: sub}
			n := s.U32()
			nb = wasmbin.AppendU32(nil, n)
			for i := uint32(0); i < n && s.Err == nil; i++ {
				nb = wasmbin.AppendU32(nb, shift(s.U32()))
				if id == 1 {
					nb = wasmbin.AppendName(nb, s.Name())
					continue
				}
				start := s.Off
				m := s.U32()
				for j := uint32(0); j < m && s.Err == nil; j++ {
					s.U32()
					s.Name()
				}
				nb = append(nb, sub[start:s.Off]...)
			}
			if s.Err != nil || s.Off != len(sub) {
				return nil, false
			}
		default:
			nb = sub
		}
		out = append(out, id)
		out = wasmbin.AppendU32(out, uint32(len(nb)))
		out = append(out, nb...)
	}
	return out, true
}
