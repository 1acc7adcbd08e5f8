package meter_test

import (
	"bytes"
	"context"
	"errors"
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
// deterministic, and that whatever wazero accepts it either instruments
// into a module wazero accepts too or refuses as a feature wazero does not
// run. The seed corpus is the small fixtures of internal/testdata/wat
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
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads))
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, bin []byte) {
		out, err := meter.Instrument(bin)
		valid := false
		if cm, cerr := rt.CompileModule(ctx, bin); cerr == nil {
			valid = true
			_ = cm.Close(ctx)
		}
		if err != nil {
			if valid && errors.Is(err, meter.ErrMalformed) {
				t.Fatalf("wazero compiles the module, the rewriter calls it malformed: %v", err)
			}
			return
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
