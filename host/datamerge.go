package host

import (
	"bytes"
	"encoding/binary"
)

// dataMergeVersion names what mergeData writes (see rewriteVersion).
const dataMergeVersion = "d1"

// mergeGap is the widest run of zeros between two active data segments
// that mergeData fills to make them one.
const mergeGap = 256

// mergeData returns bin with its active data segments merged where they
// are in ascending order and at most mergeGap bytes apart, the gaps filled
// with zeros (which the fresh memory holds anyway). A Go guest has some
// forty thousand data segments, the linker's cut around every run of
// zeros; wazero keeps a slice per segment per instance (about 1 MB of Go
// heap for each instance) and decodes each at compile time. The memory
// every instance starts with is byte for byte the same. A module whose
// data section is not all active segments of memory 0 at constant offsets,
// or that has a data count section (memory.init and data.drop name
// segments by index), is returned as it is, as is anything that does not
// parse.
func mergeData(bin []byte) []byte {
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return bin
	}
	off := 8
	dataStart, dataEnd, dataBody := -1, -1, -1
	for off < len(bin) {
		id := bin[off]
		n, k := binary.Uvarint(bin[off+1:])
		if k <= 0 || n > uint64(len(bin)) || off+1+k+int(n) > len(bin) {
			return bin
		}
		body := off + 1 + k
		switch id {
		case 12:
			return bin
		case 11:
			dataStart, dataBody, dataEnd = off, body, body+int(n)
		}
		off = body + int(n)
	}
	if dataStart < 0 {
		return bin
	}
	type seg struct {
		at   int64
		data []byte
	}
	r := bin[dataBody:dataEnd]
	count, k := binary.Uvarint(r)
	if k <= 0 || count > uint64(len(r)) {
		return bin
	}
	r = r[k:]
	segs := make([]seg, 0, count)
	for range count {
		// flags 0, i32.const N, end, size, bytes.
		if len(r) < 2 || r[0] != 0 || r[1] != 0x41 {
			return bin
		}
		at, k := sleb32(r[2:])
		if k <= 0 || len(r) < 2+k+1 || r[2+k] != 0x0b || at < 0 {
			return bin
		}
		r = r[2+k+1:]
		size, k := binary.Uvarint(r)
		if k <= 0 || size > uint64(len(r)-k) {
			return bin
		}
		segs = append(segs, seg{at, r[k : k+int(size)]})
		r = r[k+int(size):]
	}
	if len(r) != 0 {
		return bin
	}
	var merged []seg
	for _, s := range segs {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			end := last.at + int64(len(last.data))
			if gap := s.at - end; gap >= 0 && gap <= mergeGap {
				last.data = append(last.data, make([]byte, gap)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, seg{s.at, append([]byte(nil), s.data...)})
	}
	if len(merged) == len(segs) {
		return bin
	}
	var sec []byte
	sec = binary.AppendUvarint(sec, uint64(len(merged)))
	for _, s := range merged {
		sec = append(sec, 0, 0x41)
		sec = appendSleb32(sec, s.at)
		sec = append(sec, 0x0b)
		sec = binary.AppendUvarint(sec, uint64(len(s.data)))
		sec = append(sec, s.data...)
	}
	out := make([]byte, 0, len(bin))
	out = append(out, bin[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	return append(out, bin[dataEnd:]...)
}

// sleb32 reads a signed LEB128 i32; k <= 0 when it does not parse.
func sleb32(b []byte) (v int64, k int) {
	var shift uint
	for i, c := range b {
		if i >= 5 {
			return 0, 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if c&0x40 != 0 {
				v -= 1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func appendSleb32(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
