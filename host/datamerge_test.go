package host_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// dataImage applies bin's active data segments in order to a zeroed
// memory, as an instantiation does, and returns it with the count of
// segments.
func dataImage(t *testing.T, bin []byte) ([]byte, int) {
	t.Helper()
	off := 8
	for off < len(bin) {
		id := bin[off]
		n, k := binary.Uvarint(bin[off+1:])
		body := off + 1 + k
		if id != 11 {
			off = body + int(n)
			continue
		}
		r := bin[body : body+int(n)]
		count, k := binary.Uvarint(r)
		r = r[k:]
		var mem []byte
		for range count {
			at, k := host.Sleb32(r[2:])
			r = r[2+k+1:]
			size, k := binary.Uvarint(r)
			data := r[k : k+int(size)]
			r = r[k+int(size):]
			if end := int(at) + len(data); end > len(mem) {
				mem = append(mem, make([]byte, end-len(mem))...)
			}
			copy(mem[at:], data)
		}
		return mem, int(count)
	}
	t.Fatal("no data section")
	return nil, 0
}

// TestMergeData: a Go guest's tens of thousands of data segments become a
// handful, the memory an instance starts with is the same byte for byte,
// and what mergeData cannot read it leaves as it is.
func TestMergeData(t *testing.T) {
	t.Parallel()
	bin := testdata.Bytes(t, "good")
	merged := host.MergeData(bin)
	want, before := dataImage(t, bin)
	got, after := dataImage(t, merged)
	if before < 1000 || after > 50 {
		t.Fatalf("%d segments merged into %d, want thousands into a handful", before, after)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the merged data differ (%d bytes vs %d)", len(got), len(want))
	}
	if !bytes.Equal(host.MergeData(merged), merged) {
		t.Fatal("merging a merged module changed it")
	}
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"not wasm", []byte("nope")},
		{"no data", []byte("\x00asm\x01\x00\x00\x00")},
		{"truncated section", []byte("\x00asm\x01\x00\x00\x00\x0b\x10\x01")},
		{"passive segment", []byte("\x00asm\x01\x00\x00\x00\x0b\x07\x02\x01\x01a\x01\x01b")},
		{"data count", []byte("\x00asm\x01\x00\x00\x00\x0c\x01\x02\x0b\x0d\x02\x00\x41\x00\x0b\x01a\x00\x41\x01\x0b\x01b")},
		{"global offset", []byte("\x00asm\x01\x00\x00\x00\x0b\x0d\x02\x00\x23\x00\x0b\x01a\x00\x41\x01\x0b\x01b")},
	} {
		if got := host.MergeData(tt.in); !bytes.Equal(got, tt.in) {
			t.Errorf("%s: changed to %x", tt.name, got)
		}
	}
	// Two adjacent segments, and one beyond the gap, become two.
	in := []byte("\x00asm\x01\x00\x00\x00\x0b\x14\x03\x00\x41\x00\x0b\x01a\x00\x41\x02\x0b\x01b\x00\x41\x80\x10\x0b\x01c")
	want2 := []byte("\x00asm\x01\x00\x00\x00\x0b\x10\x02\x00\x41\x00\x0b\x03a\x00b\x00\x41\x80\x10\x0b\x01c")
	if got := host.MergeData(in); !bytes.Equal(got, want2) {
		t.Errorf("merged %x, want %x", got, want2)
	}
}
