// Package wasmbin reads and writes the primitive encodings of the
// WebAssembly binary format (version 1): the module's preamble and section
// headers, LEB128 numbers, byte vectors and names. It is the one reader of
// the format the host has; the metering (host/internal/meter) and the
// call-stack bound (host/callstack.go) rewrite modules with it.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrMalformed is returned for input that is not a well-formed wasm 1 module.
var ErrMalformed = errors.New("malformed module")

// ErrNotWasm1 is returned for input without the wasm 1 preamble.
var ErrNotWasm1 = errors.New("not a wasm 1 module")

// Preamble is the magic number and version a wasm 1 module starts with.
const Preamble = "\x00asm\x01\x00\x00\x00"

// Section ids.
const (
	SecCustom   = 0
	SecType     = 1
	SecImport   = 2
	SecFunction = 3
	SecTable    = 4
	SecMemory   = 5
	SecGlobal   = 6
	SecExport   = 7
	SecStart    = 8
	SecElement  = 9
	SecCode     = 10
	SecData     = 11
	SecDataCnt  = 12
	SecTag      = 13
)

// Order is the position a known section must take in a module.
func Order(id byte) int {
	switch id {
	case SecTag: // between memory and global
		return 55
	case SecDataCnt: // between element and code
		return 95
	}
	return int(id) * 10
}

// Section is one section of a module: its id and its body.
type Section struct {
	ID   byte
	Body []byte
}

// Sections splits a module into its sections, in order; each body is a
// slice of bin. On a header it cannot read it returns the sections before
// it and the reader's error (a *DecodeError).
func Sections(bin []byte) ([]Section, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte(Preamble)) {
		return nil, ErrNotWasm1
	}
	r := &Reader{B: bin, Off: 8}
	var secs []Section
	for r.Off < len(bin) {
		id := r.Byte()
		body := r.Bytes(r.U32())
		if r.Err != nil {
			return secs, r.Err
		}
		secs = append(secs, Section{id, body})
	}
	return secs, nil
}

// DecodeError is a Reader's failure: the input ended, or an encoding was
// not well-formed, at byte Off of the reader's input.
type DecodeError struct{ Off int }

func (e *DecodeError) Error() string {
	return fmt.Sprintf("truncated or bad encoding at byte %d: %v", e.Off, ErrMalformed)
}

func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Reader decodes the primitive encodings from B, starting at Off. Its first
// failure sticks (Err, a *DecodeError); reads after it return zero values.
type Reader struct {
	B   []byte
	Off int
	Err error
}

// Fail records a failure at the current offset, unless one is recorded.
func (r *Reader) Fail() {
	if r.Err == nil {
		r.Err = &DecodeError{Off: r.Off}
	}
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil || r.Off >= len(r.B) {
		r.Fail()
		return 0
	}
	c := r.B[r.Off]
	r.Off++
	return c
}

// LEB reads an LEB128 number of at most bits bits, signed or not. Bits
// beyond bits in the last byte must be zero, or for a signed number copies
// of its sign bit.
func (r *Reader) LEB(bits uint, signed bool) uint64 {
	var v uint64
	var shift uint
	for {
		c := r.Byte()
		if r.Err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < bits {
				if signed && c&0x40 != 0 {
					v |= ^uint64(0) << shift
				}
				return v
			}
			used := bits - (shift - 7) // value bits in c
			extra := c >> used & (0x7f >> used)
			if signed {
				sign := c >> (used - 1) & 1
				if sign == 1 && extra != 0x7f>>used || sign == 0 && extra != 0 {
					r.Fail()
					return 0
				}
				if sign == 1 && bits < 64 {
					v |= ^uint64(0) << bits
				}
				return v
			}
			if extra != 0 {
				r.Fail()
				return 0
			}
			return v
		}
		if shift >= bits {
			r.Fail()
			return 0
		}
	}
}

// U32 reads an unsigned 32-bit LEB128 number.
func (r *Reader) U32() uint32 { return uint32(r.LEB(32, false)) }

// Bytes reads n bytes, a slice of the input.
func (r *Reader) Bytes(n uint32) []byte {
	if r.Err != nil || uint64(r.Off)+uint64(n) > uint64(len(r.B)) {
		r.Fail()
		return nil
	}
	b := r.B[r.Off : r.Off+int(n)]
	r.Off += int(n)
	return b
}

// Name reads a name: its length and its bytes.
func (r *Reader) Name() string { return string(r.Bytes(r.U32())) }

// Limits reads a table's or memory's limits: flags, minimum, and the
// maximum when flags say there is one.
func (r *Reader) Limits() {
	flags := r.Byte()
	r.U32()
	if flags&1 != 0 {
		r.U32()
	}
}

// AppendU32 appends v as an unsigned LEB128 number.
func AppendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendS64 appends v as a signed LEB128 number (the encoding of an i32 is
// that of the same value as an i64).
func AppendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendName appends a name: its length and its bytes.
func AppendName(b []byte, s string) []byte {
	b = AppendU32(b, uint32(len(s)))
	return append(b, s...)
}

// AppendSection appends a section with its header.
func AppendSection(b []byte, id byte, body []byte) []byte {
	b = append(b, id)
	b = AppendU32(b, uint32(len(body)))
	return append(b, body...)
}
