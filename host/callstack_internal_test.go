package host

import (
	"errors"
	"testing"
)

// TestBoundCallStackRefuses checks that a module the instrumentation cannot
// parse is refused rather than loaded without the bound.
func TestBoundCallStackRefuses(t *testing.T) {
	t.Parallel()
	head := []byte("\x00asm\x01\x00\x00\x00")
	tests := []struct {
		name string
		bin  []byte
		err  string
	}{
		{"not wasm", []byte("\x00asm\x02\x00\x00\x00"), "host: call-stack bound: not a wasm 1 module: module cannot be instrumented"},
		{"truncated section", append(head, 0x01, 0x05, 0x01), "host: call-stack bound: truncated at byte 10: module cannot be instrumented"},
		{"not a function type", append(head, 0x01, 0x02, 0x01, 0x5f), "host: call-stack bound: type 0 is not a function type: module cannot be instrumented"},
		{"bodies without functions", append(head, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b), "host: call-stack bound: 1 bodies for 0 functions: module cannot be instrumented"},
		{"type out of range", append(head, 0x03, 0x02, 0x01, 0x07, 0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b),
			"host: call-stack bound: function 0 has type 7 of 0: module cannot be instrumented"},
	}
	for _, tt := range tests {
		_, err := rewriteCallStack(tt.bin, 1<<20)
		if !errors.Is(err, errStackRewrite) || err.Error() != tt.err {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.err)
		}
	}
}

func TestCallStackBudget(t *testing.T) {
	t.Parallel()
	for pages, want := range map[uint32]uint32{16: 256 << 10, 128: 2 << 20, 512: 8 << 20, 1024: 8 << 20, 65536: 8 << 20} {
		if got := callStackBudget(pages); got != want {
			t.Errorf("callStackBudget(%d) = %d, want %d", pages, got, want)
		}
	}
}
