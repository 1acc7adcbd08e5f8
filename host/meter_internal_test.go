package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestRewriteGolden pins the output of both rewrites on one committed
// fixture (a loop, calls, imports) to rewriteVersion, which names the
// rewrites kept on disk: a change of either rewriter's output fails here
// until meter.Version, callStackVersion or dataMergeVersion is bumped and
// its digest added.
// Never edit an entry: add one.
func TestRewriteGolden(t *testing.T) {
	t.Parallel()
	golden := map[string]string{
		"m2s1": "c83c0ea97b1c67f1e53e5e7ef7d75cb0adadd1bccdf4c779b7a0e75441b56b6d",
		// m3 lowered the prepayment cap, which this fixture's loops stay
		// under: same bytes here, different ones for large Go functions.
		"m3s1": "c83c0ea97b1c67f1e53e5e7ef7d75cb0adadd1bccdf4c779b7a0e75441b56b6d",
		// d1 merges data segments; this fixture has none to merge.
		"m3s1d1": "c83c0ea97b1c67f1e53e5e7ef7d75cb0adadd1bccdf4c779b7a0e75441b56b6d",
	}
	bin, err := os.ReadFile(filepath.Join("..", "internal", "testdata", "wat", "extismrecursion.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rewriteModule(bin, callStackBudget(1024))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%x", sha256.Sum256(out))
	if want, ok := golden[rewriteVersion]; !ok || got != want {
		t.Fatalf("the rewrite of extismrecursion.wasm under %s has digest %s, want %s: bump meter.Version or callStackVersion and add the new digest", rewriteVersion, got, want)
	}
}

// TestRewriteFileKey checks a rewrite on disk is read only under the name
// it was written as, and only up to the cap.
func TestRewriteFileKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := []byte("\x00asm\x01\x00\x00\x00")
	const name = "k1.wasm"
	if err := writeRewrite(dir, name, b); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k2.wasm"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file string
		max  int64
		ok   bool
	}{
		{"its own name", name, 1 << 20, true},
		{"copied under another name", "k2.wasm", 1 << 20, false},
		{"exactly the cap", name, int64(len(raw)), true},
		{"over the cap", name, int64(len(raw)) - 1, false},
		{"absent", "k3.wasm", 1 << 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := readRewrite(filepath.Join(dir, tt.file), tt.max)
			if ok != tt.ok || ok && !bytes.Equal(got, b) {
				t.Fatalf("read %q, %t; want %t", got, ok, tt.ok)
			}
		})
	}
}

// A refill within quickRefill of the call's last one doubles the quantum up
// to maxQuantum; a slower one, and a call's first, hands out meterQuantum.
func TestRefillQuantum(t *testing.T) {
	t.Parallel()
	st := &callState{}
	t0 := 1000 * time.Second
	steps := []struct {
		after time.Duration
		want  uint64
	}{
		{0, meterQuantum},
		{time.Microsecond, 2 * meterQuantum},
		{time.Microsecond, maxQuantum},
		{time.Microsecond, maxQuantum},
		{quickRefill, meterQuantum}, // slow: back to the base
		{quickRefill - 1, 2 * meterQuantum},
		{time.Millisecond, meterQuantum},
	}
	now := t0
	for i, s := range steps {
		now += s.after
		if got := st.quantum(now); got != s.want {
			t.Fatalf("step %d: quantum %d, want %d", i, got, s.want)
		}
	}
	if maxQuantum != 2*meterQuantum {
		t.Fatalf("maxQuantum %d: the bound RATIONALE states is two quanta", maxQuantum)
	}
}
