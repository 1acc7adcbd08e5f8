package wasmbin

import (
	"bytes"
	"errors"
	"testing"
)

func TestLEB(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		in     []byte
		bits   uint
		signed bool
		want   uint64
		err    string
	}{
		{"one byte", []byte{0x05}, 32, false, 5, ""},
		{"two bytes", []byte{0xe8, 0x07}, 32, false, 1000, ""},
		{"u32 max", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, false, 1<<32 - 1, ""},
		{"u32 past 32 bits", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 32, false, 0, "truncated or bad encoding at byte 5: malformed module"},
		{"u32 too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, false, 0, "truncated or bad encoding at byte 5: malformed module"},
		{"truncated", []byte{0x80}, 32, false, 0, "truncated or bad encoding at byte 1: malformed module"},
		{"s32 -1", []byte{0x7f}, 32, true, ^uint64(0), ""},
		{"s32 min", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, 32, true, uint64(1<<64 - 1<<31), ""},
		{"s32 bad sign bits", []byte{0x80, 0x80, 0x80, 0x80, 0x70}, 32, true, 0, "truncated or bad encoding at byte 5: malformed module"},
		{"s33 block type", []byte{0x40}, 33, true, uint64(1<<64 - 64), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Reader{B: tt.in}
			got := r.LEB(tt.bits, tt.signed)
			if tt.err != "" {
				if r.Err == nil || r.Err.Error() != tt.err || !errors.Is(r.Err, ErrMalformed) {
					t.Fatalf("err %v, want %q", r.Err, tt.err)
				}
				return
			}
			if r.Err != nil || got != tt.want {
				t.Fatalf("got %#x, %v; want %#x", got, r.Err, tt.want)
			}
		})
	}
}

func TestAppendRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 1 << 31, -1 << 31, 1<<63 - 1, -1 << 63} {
		r := &Reader{B: AppendS64(nil, v)}
		if got := int64(r.LEB(64, true)); got != v || r.Err != nil || r.Off != len(r.B) {
			t.Errorf("AppendS64(%d) reads back as %d, %v", v, got, r.Err)
		}
	}
	for _, v := range []uint32{0, 127, 128, 1<<32 - 1} {
		r := &Reader{B: AppendU32(nil, v)}
		if got := r.U32(); got != v || r.Err != nil || r.Off != len(r.B) {
			t.Errorf("AppendU32(%d) reads back as %d, %v", v, got, r.Err)
		}
	}
}

func TestSections(t *testing.T) {
	t.Parallel()
	bin := []byte(Preamble)
	bin = AppendSection(bin, SecType, []byte{0x01, 0x60, 0x00, 0x00})
	bin = AppendSection(bin, SecCustom, AppendName(nil, "name"))
	secs, err := Sections(bin)
	if err != nil || len(secs) != 2 || secs[0].ID != SecType || secs[1].ID != SecCustom || string(secs[1].Body) != "\x04name" {
		t.Fatalf("Sections = %v, %v", secs, err)
	}
	if _, err := Sections([]byte("\x00asm\x02\x00\x00\x00")); !errors.Is(err, ErrNotWasm1) {
		t.Errorf("version 2: %v", err)
	}
	secs, err = Sections(append(bin, 0x01, 0x05, 0x01))
	var de *DecodeError
	if len(secs) != 2 || !errors.As(err, &de) || de.Off != len(bin)+2 {
		t.Errorf("truncated header: %v, %v", secs, err)
	}
}

// FuzzSections checks that splitting never panics and that the sections of
// a module it reads whole write back to the same bytes.
func FuzzSections(f *testing.F) {
	f.Add([]byte(Preamble))
	f.Add(AppendSection([]byte(Preamble), SecType, []byte{0x01, 0x60, 0x00, 0x00}))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x01\x05\x01"))
	f.Fuzz(func(t *testing.T, bin []byte) {
		secs, err := Sections(bin)
		if err != nil {
			return
		}
		out := []byte(Preamble)
		for _, s := range secs {
			out = AppendSection(out, s.ID, s.Body)
		}
		// a non-minimal length encoding reads, and writes back minimal
		if len(out) > len(bin) || (len(out) == len(bin) && !bytes.Equal(out, bin)) {
			t.Fatalf("sections write back as %x, read from %x", out, bin)
		}
	})
}
