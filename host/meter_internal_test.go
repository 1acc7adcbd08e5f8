package host

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/host/internal/meter"
)

func TestRewriteMemo(t *testing.T) {
	t.Parallel()
	bin := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x07\x01\x05\x00\x03\x40\x0b\x0b")
	dir := t.TempDir()
	h := &Host{opts: Options{CacheDir: dir}}
	k := newRewriteKey(bin, 1<<20)
	want, err := rewriteModule(bin, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.instrument(bin, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("instrument: %v", err)
	}
	file := filepath.Join(dir, "warden-rewrite", k.file())
	if b, ok := readRewrite(file, 1<<30); !ok || !bytes.Equal(b, want) {
		t.Fatal("the rewrite is not on disk")
	}
	if b, err := boundCallStack(bin, 1<<20); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("boundCallStack does not find the memo: %v", err)
	}

	// A damaged file reads as absent.
	raw, _ := os.ReadFile(file)
	raw[len(raw)-1] ^= 0xff
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := readRewrite(file, 1<<30); ok {
		t.Fatal("a damaged rewrite was read")
	}
}

func TestRewriteRefusesReservedImport(t *testing.T) {
	t.Parallel()
	bin := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00" +
		"\x02\x12\x01\x0cwarden_meter\x01x\x00\x00")
	_, err := rewriteModule(bin, 1<<20)
	want := `host: module cannot be instrumented: meter: import 0 from "warden_meter": module imports the meter's reserved module`
	if !errors.Is(err, errStackRewrite) || !errors.Is(err, meter.ErrReserved) || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
}

// TestLoadRefusesUnbackedCounts checks that a module whose counts no bytes
// back is refused before wazero decodes it: wazero v1.12 allocates for such
// a count first and runs the process out of memory.
func TestLoadRefusesUnbackedCounts(t *testing.T) {
	t.Parallel()
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	tests := []struct {
		name, bin, err string
	}{
		{"type section", "\x00asm\x01\x00\x00\x00\x01\x12\x04`\xfa\xfa\xfa\xfa\v\x02\x00\x00",
			"host: compile x: module does not compile: host: module cannot be instrumented: meter: section headers: truncated or bad encoding at byte 10: malformed module"},
		{"data section", "\x00asm\x01\x00\x00\x00\x0b\x05\xfa\xfa\xfa\xfa\x0a",
			"host: compile x: module does not compile: host: module cannot be instrumented: meter: section 11 counts 2942221690 entries in 5 bytes: malformed module"},
	}
	for _, tt := range tests {
		_, err := h.Load(context.Background(), Source{Name: "x", Bytes: []byte(tt.bin)}, Policy{})
		if !errors.Is(err, ErrCompile) || !errors.Is(err, meter.ErrMalformed) || err.Error() != tt.err {
			t.Errorf("%s: %v\nwant %s", tt.name, err, tt.err)
		}
		// Precompile takes the same path: the module never reaches wazero.
		err = h.Precompile(context.Background(), Source{Name: "x", Bytes: []byte(tt.bin)}, Policy{})
		if !errors.Is(err, ErrCompile) || !errors.Is(err, meter.ErrMalformed) || err.Error() != tt.err {
			t.Errorf("precompile %s: %v\nwant %s", tt.name, err, tt.err)
		}
	}
}
