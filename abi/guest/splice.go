package guest

import (
	"encoding/binary"

	"github.com/agentwarden/warden/abi"
)

// Parts names the payloads of Splice: literal JSON the guest writes and
// values of the envelope the host copies in (docs/ABI.md, "splice"). A
// payload holding a large value of the envelope — a response, a subtree of
// it — is then neither copied into the guest nor encoded there. The zero
// value is empty; Reset empties it for reuse.
type Parts struct {
	b   []byte
	lit int // where the open literal's text starts, 0 when none is open
}

// Reset empties p, keeping its buffer.
func (p *Parts) Reset() { p.b, p.lit = p.b[:0], 0 }

// Bytes is the encoded parts.
func (p *Parts) Bytes() []byte {
	p.close()
	return p.b
}

// close ends the open literal, writing its length.
func (p *Parts) close() {
	if !p.opened() {
		return
	}
	binary.LittleEndian.PutUint32(p.b[p.lit-4:], uint32(len(p.b)-p.lit))
	p.lit = 0
}

// JSON appends literal JSON text.
func (p *Parts) JSON(s string) {
	p.begin()
	p.b = append(p.b, s...)
}

// RawJSON appends literal JSON text.
func (p *Parts) RawJSON(b []byte) {
	p.begin()
	p.b = append(p.b, b...)
}

// String appends s as a JSON string, as abi.Marshal writes one.
func (p *Parts) String(s string) {
	p.begin()
	p.b = abi.AppendJSONString(p.b, s, false)
}

// Literal appends literal JSON through fn, which appends to the buffer it
// is given and returns it.
func (p *Parts) Literal(fn func(b []byte) []byte) {
	p.begin()
	p.b = fn(p.b)
}

// begin opens a literal unless one is open.
func (p *Parts) begin() {
	if !p.opened() {
		p.b = append(p.b, spliceJSON, 0, 0, 0, 0)
		p.lit = len(p.b)
	}
}

// opened reports whether a literal is open: its length is the 4 bytes
// before p.lit (lit is 0 in the zero value, which has none open).
func (p *Parts) opened() bool { return p.lit > 0 && p.lit <= len(p.b) }

// Value appends the value at a gjson path of the envelope, without
// insignificant whitespace; null when the path matches nothing.
func (p *Parts) Value(path string) {
	p.close()
	p.b = append(p.b, spliceValue)
	p.b = appendLen(p.b, path)
}

// Segment is one piece of a StringOf: text, or a value of the envelope.
type Segment struct {
	mode byte
	s    string
}

// Text is a segment of text taken as it is.
func Text(s string) Segment { return Segment{segmentText, s} }

// RawText is a segment of the text of the value at a gjson path, without
// insignificant whitespace (nothing when the path matches nothing).
func RawText(path string) Segment { return Segment{segmentRaw, path} }

// CanonicalText is a segment of the canonical JSON of the value at a gjson
// path (as Canonical answers it).
func CanonicalText(path string) Segment { return Segment{segmentCanonical, path} }

// StringOf appends one JSON string of the segments' text, cut to limit
// bytes at a UTF-8 boundary with "…" appended when cut (as
// contract.Truncate cuts).
func (p *Parts) StringOf(limit int, segs ...Segment) {
	p.close()
	p.b = append(p.b, spliceString)
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(max(limit, 0)))
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(len(segs)))
	for _, s := range segs {
		p.b = append(p.b, s.mode)
		p.b = appendLen(p.b, s.s)
	}
}

// Leaves appends a JSON array of strings: Walk's distinct non-null scalar
// leaves of the value at a gjson path, at most limit of them.
func (p *Parts) Leaves(path string, limit int) {
	p.close()
	p.b = append(p.b, spliceLeaves)
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(max(limit, 0)))
	p.b = appendLen(p.b, path)
}

// End ends a payload: what follows makes the next one.
func (p *Parts) End() {
	p.close()
	p.b = append(p.b, spliceEnd)
}

func appendLen(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// The encoding of parts (docs/ABI.md, "splice").
const (
	spliceJSON       = abi.SpliceJSON
	spliceValue      = abi.SpliceValue
	spliceString     = abi.SpliceString
	spliceLeaves     = abi.SpliceLeaves
	spliceEnd        = abi.SpliceEnd
	segmentText      = abi.SegmentText
	segmentRaw       = abi.SegmentRaw
	segmentCanonical = abi.SegmentCanonical
)

// Splice asks for effects of one kind whose payloads the host assembles
// from p: one effect per payload (End separates them), each applied if the
// call is accepted, as Effect's. The literal JSON is checked as Effect's
// payload is, with null in place of each value the host copies in (a
// value may stand only where JSON takes a value).
func (c *Call) Splice(kind string, p *Parts) { c.r.splice(kind, p.Bytes()) }
