package meter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentwarden/warden/host/internal/meter"
	"github.com/agentwarden/warden/internal/testdata"
)

// FuzzInstrument checks that the rewriter never panics, that it is
// deterministic, and that what it instruments of a module wazero accepts
// wazero accepts too. The seed corpus is the small fixtures of internal/testdata/wat
// (testdata/fuzz/FuzzInstrument holds them and what fuzzing kept).
func FuzzInstrument(f *testing.F) {
	wats, err := filepath.Glob(filepath.Join(testdata.Root(), "internal", "testdata", "wat", "*.wasm"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range wats {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(module())
	f.Add(oneFunc(i32Type, 0x03, 0x40, 0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00,
		0x23, 0x00, 0x41, 0xe8, 0x07, 0x49, 0x0d, 0x00, 0x0b, 0x23, 0x00, 0x0b))
	f.Add(oneFunc(i32Type, 0x41, 0x00, 0xd2, 0x00, 0x26, 0x00, 0x41, 0x00, 0x25, 0x00, 0xd1, 0x0b))
	f.Add(oneFunc(i32Type, append(append([]byte{0xfd, 0x0c}, make([]byte, 16)...), 0xfd, 0x15, 0x00, 0x0b)...))
	// the review's probes: the hidden loop counter written, work after a
	// block, a bulk op after a block
	f.Add(oneFunc(voidType, 0x03, 0x40, 0x41, 0x05, 0x21, 0x00, 0x0c, 0x00, 0x0b, 0x0b))
	f.Add(oneFunc(voidType, passesOf(3, 0x41, 0x00, 0x41, 0x00, 0x36, 0x02, 0x00)...))
	f.Add(oneFunc(voidType, passesOf(3, 0x41, 0x00, 0x41, 0x00, 0x41, 0x08, 0xfc, 0x0b, 0x00)...))
	f.Add(oneFunc(voidType, 0x03, 0x40, 0x03, 0x40, 0x02, 0x40, 0x0c, 0x01, 0x0b, 0x01, 0x0b, 0x01, 0x0b))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads))
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, bin []byte) {
		out, err := meter.Instrument(bin)
		valid := false
		if err != nil {
			return
		}
		// wazero v1.12 is not safe on every input: its decoder allocates
		// what a vector's count says before reading the vector (a 20-byte
		// module can ask for gigabytes), and its validator indexes the type
		// section with an import's unchecked type index. It only sees input
		// the rewriter accepted (which checks those indices) whose other
		// counts are backed by bytes.
		if countsFit(bin) {
			if cm, cerr := rt.CompileModule(ctx, bin); cerr == nil {
				valid = true
				_ = cm.Close(ctx)
			}
		}
		again, err := meter.Instrument(bin)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("a second rewrite differs (%v)", err)
		}
		if !valid {
			return
		}
		cm, err := rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("the instrumented module does not compile: %v", err)
		}
		_ = cm.Close(ctx)
	})
}

// countsFit reports whether the count of each section the rewriter copies
// without reading it (table, memory, data) is at most its length.
func countsFit(bin []byte) bool {
	off := 8
	for off < len(bin) {
		id := bin[off]
		size, n := uleb(bin[off+1:])
		if n == 0 || uint64(off+1+n)+size > uint64(len(bin)) {
			return false
		}
		body := bin[off+1+n : off+1+n+int(size)]
		if id == 4 || id == 5 || id == 11 {
			if c, m := uleb(body); m == 0 || c > uint64(len(body)) {
				return false
			}
		}
		off += 1 + n + int(size)
	}
	return true
}

func uleb(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
