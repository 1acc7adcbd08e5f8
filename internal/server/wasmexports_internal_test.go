package server

import (
	"slices"
	"testing"
)

// commandModule exports _start (a command); reactorModule _initialize.
var (
	commandModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0,
		7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0,
		10, 4, 1, 2, 0, 0x0b}
	reactorModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0,
		7, 15, 1, 11, '_', 'i', 'n', 'i', 't', 'i', 'a', 'l', 'i', 'z', 'e', 0, 0,
		10, 4, 1, 2, 0, 0x0b}
)

func TestWasmExports(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		b    []byte
		want []string
		ok   bool
	}{
		{"command", commandModule, []string{"_start"}, true},
		{"reactor", reactorModule, []string{"_initialize"}, true},
		{"no export section", commandModule[:18], nil, true},
		{"a section past the end", append(append([]byte{}, commandModule[:18]...), 7, 100, 1), nil, false},
		{"an export name past its section", append(append([]byte{}, commandModule[:18]...), 7, 3, 1, 50, 'x'), nil, false},
		{"no kind", append(append([]byte{}, commandModule[:18]...), 7, 3, 1, 1, 'x'), nil, false},
	} {
		got, ok := wasmExports(tt.b)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q %v, want %q %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzWasmExports: no module, however cut or forged, makes the export
// reader panic or read past its input.
func FuzzWasmExports(f *testing.F) {
	f.Add(commandModule)
	f.Add(reactorModule)
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x07\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		names, ok := wasmExports(b)
		if !ok && names != nil {
			t.Fatalf("names %q with ok false", names)
		}
		total := 0
		for _, n := range names {
			total += len(n)
		}
		if total > len(b) {
			t.Fatalf("export names of %d bytes from a %d-byte module", total, len(b))
		}
	})
}
