package host

import (
	"bytes"
	"testing"
)

// FuzzSplitSelection: the binding of a module to a plugin is read from
// untrusted bytes. Whatever they are, splitSelection does not panic; when
// it finds a binding, the module is what precedes it, and binding the
// bytes again replaces it.
func FuzzSplitSelection(f *testing.F) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	f.Add(header)
	f.Add(SelectPlugin(header, "argpolicy"))
	f.Add(SelectPlugin(SelectPlugin(header, "argpolicy"), "builtin.env"))
	f.Add(append(append([]byte{}, header...), 0x00, 0x05, 0x03, 'a', 'b', 'c', 'd'))
	f.Add(append(append([]byte{}, header...), 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Add(append(append([]byte{}, header...), 0x01, 0x80, 0x80, 0x80, 0x80, 0x10))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, p, ok := splitSelection(b)
		if !ok {
			if !bytes.Equal(m, b) || p != "" {
				t.Fatalf("no binding, yet module %x plugin %q", m, p)
			}
			return
		}
		if len(m) >= len(b) || !bytes.HasPrefix(b, m) {
			t.Fatalf("module %x is not a proper prefix of %x", m, b)
		}
		m2, p2, ok2 := splitSelection(SelectPlugin(b, "x"))
		if !ok2 || p2 != "x" || !bytes.Equal(m2, m) {
			t.Fatalf("rebound: %x %q %v, want %x x", m2, p2, ok2, m)
		}
	})
}

// The LEB128 reader takes what wasm allows for a u32 and no more.
func TestReadULEB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []byte
		v    uint32
		size int
	}{
		{[]byte{0x00}, 0, 1},
		{[]byte{0x7f}, 127, 1},
		{[]byte{0x80, 0x01}, 128, 2},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, 5},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, 0},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0},
		{[]byte{0x80}, 0, 0},
		{nil, 0, 0},
	}
	for _, tt := range tests {
		if v, n := readULEB(tt.in); v != tt.v || n != tt.size {
			t.Errorf("readULEB(%x) = %d, %d; want %d, %d", tt.in, v, n, tt.v, tt.size)
		}
	}
	for _, v := range []uint32{0, 1, 127, 128, 300, 1 << 20, 1<<32 - 1} {
		if got, n := readULEB(appendULEB(nil, v)); got != v || n != len(appendULEB(nil, v)) {
			t.Errorf("round trip of %d: %d", v, got)
		}
	}
}
