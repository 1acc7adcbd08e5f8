package services

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/wordscan"
	"github.com/tidwall/gjson"
)

// The parts of a splice (docs/ABI.md, "splice"; abi.SpliceJSON …): a
// guest names an effect's payload as literal JSON it wrote and values of
// the request the host copies in, so that a payload holding a large value
// of the request (a response, a subtree of it) is neither copied into the
// guest nor encoded there, and the bytes the host copies need no second
// check.
const (
	SpliceJSON       = abi.SpliceJSON
	SpliceValue      = abi.SpliceValue
	SpliceString     = abi.SpliceString
	SpliceLeaves     = abi.SpliceLeaves
	SpliceEnd        = abi.SpliceEnd
	SegmentText      = abi.SegmentText
	SegmentRaw       = abi.SegmentRaw
	SegmentCanonical = abi.SegmentCanonical
)

// Splice bounds.
const (
	// MaxSpliceParts bounds the parts of one splice.
	MaxSpliceParts = 1 << 16
	// MaxSplicePayloads bounds the payloads (effects) of one splice.
	MaxSplicePayloads = MaxItems
)

// Splice errors: ErrSplice for parts that are not well formed (the host
// refuses them), ErrSpliceJSON for a payload that would not be valid JSON
// with every key once, ErrSpliceTooLarge for payloads over the room left.
var (
	ErrSplice         = errors.New("splice refused")
	ErrSpliceJSON     = errors.New("splice: payload is not valid JSON")
	ErrSpliceTooLarge = errors.New("splice: payloads over the output limit")
)

// Spliced is one payload a splice assembled: its bytes and its skeleton,
// the literal JSON with null in place of each value the host copied in (what abi.Recorder.EffectSpliced checks).
type Spliced struct {
	Payload  []byte
	Skeleton []byte
}

// SpliceReader is what a splice reads of the request: the value at a path
// (after CheckPath) and a value's canonical JSON.
type SpliceReader interface {
	Query(path string) (gjson.Result, error)
	Canonical(v gjson.Result) []byte
}

// Splice assembles the payloads parts names from req, at most room bytes
// in all (room < 0: unbounded), and gives them to fn in order once all are
// assembled (none when it fails). Every value it copies in is checked once
// to be valid JSON with no key twice in an object (a value inside one
// checked already is not scanned again); the literal parts are checked by
// the caller through each payload's skeleton. The payloads are fn's to
// keep; a skeleton is valid only during fn.
func Splice(parts []byte, req SpliceReader, room int, fn func(n int, p Spliced)) error {
	s := splicers.Get().(*splicer)
	defer s.release()
	s.parts, s.req, s.room = parts, req, room
	if err := s.run(); err != nil {
		return err
	}
	for _, p := range s.out {
		fn(len(s.out), p)
	}
	return nil
}

// splicers keep their buffers (all but the payloads) between splices.
var splicers = sync.Pool{New: func() any { return new(splicer) }}

func (s *splicer) release() {
	if cap(s.skel) > 64<<10 || cap(s.text) > 64<<10 || cap(s.pre) > 64<<10 || cap(s.out) > 4096 {
		return // an outsized splice's buffers are not kept
	}
	clear(s.out)
	clear(s.vals)
	clear(s.checked)
	clear(s.copied)
	*s = splicer{skel: s.skel[:0], text: s.text[:0], out: s.out[:0], vals: s.vals[:0], checked: s.checked[:0], copied: s.copied[:0], skels: s.skels[:0],
		pre: s.pre[:0], preEnd: s.preEnd[:0]}
	splicers.Put(s)
}

type splicer struct {
	parts   []byte
	i       int
	req     SpliceReader
	room    int
	total   int
	checked []string // values checked valid, by their bytes
	copied  []string // the values the parts copy in
	// pre holds the strings and leaves written while measuring, one after
	// another: preEnd where each ends, preFrom where the next starts
	pre     []byte
	preEnd  []int
	preFrom int
	out     []Spliced
	buf     []byte // every payload, each a capped slice of it
	skel    []byte // the current payload's skeleton
	holes   int    // values copied into the current payload
	skels   []byte // the skeletons of payloads with values, one after another
	text    []byte // a string part's text, reused
	vals    []gjson.Result
	start   int
	// inString and escaped say where the literal JSON so far ends: inside
	// a string, after a backslash
	inString, escaped bool
}

func (s *splicer) u32() (int, error) {
	if len(s.parts)-s.i < 4 {
		return 0, fmt.Errorf("services: %w: part cut at byte %d", ErrSplice, s.i)
	}
	n := binary.LittleEndian.Uint32(s.parts[s.i:])
	s.i += 4
	return int(n), nil
}

func (s *splicer) bytes() ([]byte, error) {
	n, err := s.u32()
	if err != nil {
		return nil, err
	}
	if n > len(s.parts)-s.i {
		return nil, fmt.Errorf("services: %w: a part of %d bytes past the end", ErrSplice, n)
	}
	b := s.parts[s.i : s.i+n]
	s.i += n
	return b, nil
}

func (s *splicer) get(path []byte) (gjson.Result, error) {
	return s.req.Query(unsafe.String(unsafe.SliceData(path), len(path)))
}

func (s *splicer) run() error {
	size, payloads, err := s.measure()
	if err != nil {
		return err
	}
	if s.room >= 0 {
		size = min(size, s.room+1)
	}
	if err := s.check(); err != nil {
		return err
	}
	s.buf = make([]byte, 0, size)
	s.out = slices.Grow(s.out[:0], payloads)
	s.i = 0
	for s.i < len(s.parts) {
		tag := s.parts[s.i]
		s.i++
		var err error
		switch tag {
		case SpliceJSON:
			var b []byte
			if b, err = s.bytes(); err == nil {
				s.buf = append(s.buf, b...)
				if s.holes > 0 {
					s.skel = append(s.skel, b...)
					s.track(b)
				}
			}
		case SpliceValue, SpliceString, SpliceLeaves:
			if s.holes == 0 {
				// the first value of the payload: its skeleton starts as
				// the literal JSON so far (a payload without values is its
				// own skeleton, and its strings need no following)
				s.skel = append(s.skel[:0], s.buf[s.start:]...)
				s.inString, s.escaped = false, false
				s.track(s.skel)
			}
			if s.inString {
				// a value inside a literal's string would be read as the
				// string's text by the skeleton's check, not as a value
				return fmt.Errorf("services: %w: a value inside a string", ErrSpliceJSON)
			}
			s.holes++
			err = s.part(tag)
		case SpliceEnd:
			err = s.end()
		}
		if err != nil {
			return err
		}
		if s.room >= 0 && s.total+len(s.buf)-s.start > s.room {
			return fmt.Errorf("services: %w: more than %d bytes", ErrSpliceTooLarge, s.room)
		}
	}
	if len(s.buf) > s.start || s.holes > 0 || len(s.out) == 0 {
		if err := s.end(); err != nil {
			return err
		}
	}
	return nil
}

// measure checks the parts' framing, reads the values they copy in (kept
// in s.vals for the assembly) and estimates the payloads' size, so that
// the assembly allocates once.
func (s *splicer) measure() (size, payloads int, err error) {
	payloads = 1
	for n := 0; s.i < len(s.parts); n++ {
		if n >= MaxSpliceParts {
			return 0, 0, fmt.Errorf("services: %w: more than %d parts", ErrSplice, MaxSpliceParts)
		}
		tag := s.parts[s.i]
		s.i++
		switch tag {
		case SpliceJSON:
			b, err := s.bytes()
			if err != nil {
				return 0, 0, err
			}
			size += len(b)
		case SpliceValue:
			path, err := s.bytes()
			if err != nil {
				return 0, 0, err
			}
			v, err := s.get(path)
			if err != nil {
				return 0, 0, err
			}
			s.vals = append(s.vals, v)
			size += len(v.Raw) + 4
			if v.Exists() {
				s.copied = append(s.copied, v.Raw)
			}
		case SpliceString, SpliceLeaves:
			if tag == SpliceString && len(s.parts)-s.i >= 8 {
				// each segment of a string counts as a part
				n += int(binary.LittleEndian.Uint32(s.parts[s.i+4:]))
				if n >= MaxSpliceParts {
					return 0, 0, fmt.Errorf("services: %w: more than %d parts", ErrSplice, MaxSpliceParts)
				}
			}
			// written now, into pre, so that the payloads' size is known
			start := len(s.pre)
			var err error
			if tag == SpliceString {
				err = s.str()
			} else {
				err = s.leaves()
			}
			if err != nil {
				return 0, 0, err
			}
			if s.room >= 0 && len(s.pre) > s.room {
				return 0, 0, fmt.Errorf("services: %w: more than %d bytes", ErrSpliceTooLarge, s.room)
			}
			s.preEnd = append(s.preEnd, len(s.pre))
			size += len(s.pre) - start
		case SpliceEnd:
			if payloads++; payloads > MaxSplicePayloads+1 {
				return 0, 0, fmt.Errorf("services: %w: more than %d payloads", ErrSplice, MaxSplicePayloads)
			}
		default:
			return 0, 0, fmt.Errorf("services: %w: unknown part %q at byte %d", ErrSplice, tag, s.i-1)
		}
	}
	return size, payloads, nil
}

// check checks each value a splice copies in once: the largest first, so
// that a value inside one checked already (an extract of the response
// beside the response) is not scanned again.
func (s *splicer) check() error {
	slices.SortFunc(s.copied, func(a, b string) int { return len(b) - len(a) })
	for _, raw := range s.copied {
		if s.known(raw) {
			continue
		}
		if !abi.DistinctJSON(unsafe.Slice(unsafe.StringData(raw), len(raw))) {
			return fmt.Errorf("services: %w: a value copied in", ErrSpliceJSON)
		}
		s.checked = append(s.checked, raw)
	}
	return nil
}

// next is the next value measure read.
func (s *splicer) next() gjson.Result {
	v := s.vals[0]
	s.vals = s.vals[1:]
	return v
}

func (s *splicer) part(tag byte) error {
	if tag == SpliceValue {
		return s.value()
	}
	// written by measure: its fields are skipped, its bytes copied
	if tag == SpliceString {
		_, _ = s.u32()
		count, _ := s.u32()
		for range count {
			s.i++
			_, _ = s.bytes()
		}
	} else {
		_, _ = s.u32()
		_, _ = s.bytes()
	}
	end := s.preEnd[0]
	s.preEnd = s.preEnd[1:]
	s.buf = append(s.buf, s.pre[s.preFrom:end]...)
	s.preFrom = end
	s.skel = append(s.skel, "null"...)
	return nil
}

// track follows whether the literal JSON so far ends inside a string.
func (s *splicer) track(b []byte) {
	for i := 0; i < len(b); i++ {
		switch {
		case s.escaped:
			s.escaped = false
		case !s.inString:
			if j := bytes.IndexByte(b[i:], '"'); j >= 0 {
				i += j
				s.inString = true
			} else {
				i = len(b)
			}
		case b[i] == '\\':
			s.escaped = true
		case b[i] == '"':
			s.inString = false
		}
	}
}

func (s *splicer) end() error {
	if len(s.out) >= MaxSplicePayloads {
		return fmt.Errorf("services: %w: more than %d payloads", ErrSplice, MaxSplicePayloads)
	}
	p := s.buf[s.start:len(s.buf):len(s.buf)]
	s.total += len(p)
	skel := p // all literal: the payload is its own skeleton
	if s.holes > 0 {
		at := len(s.skels)
		s.skels = append(s.skels, s.skel...)
		skel = s.skels[at:len(s.skels):len(s.skels)]
	}
	s.out = append(s.out, Spliced{Payload: p, Skeleton: skel})
	s.start, s.skel, s.holes = len(s.buf), s.skel[:0], 0
	s.inString, s.escaped = false, false
	if len(p) == 0 {
		s.out[len(s.out)-1].Payload = nil
	}
	return nil
}

// value copies in the value at a path, compacted, after checking it.
func (s *splicer) value() error {
	_, _ = s.bytes() // measured
	v := s.next()
	s.skel = append(s.skel, "null"...)
	if !v.Exists() {
		s.buf = append(s.buf, "null"...)
		return nil
	}
	s.buf = AppendCompact(s.buf, v.Raw) // checked (check)
	return nil
}

// knownChecked bounds the values known compares with: the largest ones,
// which hold the others a splice usually copies in (an extract beside the
// response), so that many small values cost a bounded search each.
const knownChecked = 64

// known reports whether raw lies inside a value checked already (one of
// the first knownChecked; a value in none of them is scanned itself).
func (s *splicer) known(raw string) bool {
	p := uintptr(unsafe.Pointer(unsafe.StringData(raw)))
	for _, c := range s.checked[:min(len(s.checked), knownChecked)] {
		q := uintptr(unsafe.Pointer(unsafe.StringData(c)))
		if p >= q && p+uintptr(len(raw)) <= q+uintptr(len(c)) {
			return true
		}
	}
	return false
}

// str writes one JSON string of segments, cut to the limit.
func (s *splicer) str() error {
	limit, err := s.u32()
	if err != nil {
		return err
	}
	count, err := s.u32()
	if err != nil {
		return err
	}
	text := s.text[:0]
	defer func() { s.text = text[:0] }()
	for range count {
		if s.i >= len(s.parts) {
			return fmt.Errorf("services: %w: a string's segment past the end", ErrSplice)
		}
		mode := s.parts[s.i]
		s.i++
		b, err := s.bytes()
		if err != nil {
			return err
		}
		switch mode {
		case SegmentText:
			text = append(text, b...)
		case SegmentRaw, SegmentCanonical:
			if len(text) > limit {
				break // cut already: the segment is not read
			}
			v, err := s.get(b)
			if err != nil {
				return err
			}
			switch {
			case mode == SegmentCanonical:
				text = append(text, s.req.Canonical(v)...)
			case v.Exists():
				// the cut needs only the byte after the limit
				text = appendCompact(text, v.Raw, limit+1-len(text))
			}
		default:
			return fmt.Errorf("services: %w: unknown segment %q", ErrSplice, mode)
		}
		if len(text) > limit+1 {
			text = text[:limit+1]
		}
		if s.room >= 0 && len(text) > s.room {
			return fmt.Errorf("services: %w: more than %d bytes", ErrSpliceTooLarge, s.room)
		}
	}
	if len(text) > limit {
		cut := limit
		for cut > 0 && text[cut]&0xC0 == 0x80 { // not a rune's first byte
			cut--
		}
		text = append(text[:cut], "…"...)
	}
	s.pre = abi.AppendJSONString(s.pre, unsafe.String(unsafe.SliceData(text), len(text)), false)
	return nil
}

// leaves writes the walk's leaves of a value as a JSON array of strings.
func (s *splicer) leaves() error {
	limit, err := s.u32()
	if err != nil {
		return err
	}
	path, err := s.bytes()
	if err != nil {
		return err
	}
	v, err := s.get(path)
	if err != nil {
		return err
	}
	s.pre = AppendLeaves(s.pre, v, limit)
	if s.room >= 0 && len(s.pre) > s.room {
		return fmt.Errorf("services: %w: more than %d bytes", ErrSpliceTooLarge, s.room)
	}
	return nil
}

// AppendCompact appends the valid JSON src without insignificant
// whitespace, as json.Compact does (no HTML escapes); a run of bytes that
// stays as it is is copied at once.
func AppendCompact(b []byte, src string) []byte { return appendCompact(b, src, -1) }

// appendCompact is AppendCompact stopping once limit bytes (limit >= 0)
// were appended.
func appendCompact(b []byte, src string, limit int) []byte {
	start, run := len(b), 0
	for i := 0; i < len(src); i++ {
		if limit >= 0 && len(b)-start+i-run >= limit {
			// the run so far reaches the limit: the rest is not read
			return append(b, src[run:run+limit-(len(b)-start)]...)
		}
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			b = append(b, src[run:i]...)
			run = i + 1
			if limit >= 0 && len(b)-start >= limit {
				return b[:start+limit]
			}
		case '"':
			// skip to the closing quote: the first not escaped
			for i++; i+8 <= len(src) && wordscan.Plain(wordscan.Word(src, i)); {
				i += 8 // eight plain ASCII bytes
			}
			for ; i < len(src); i++ {
				if src[i] == '\\' {
					i++
					continue
				}
				if src[i] == '"' {
					break
				}
			}
		}
	}
	b = append(b, src[run:]...)
	if limit >= 0 && len(b)-start > limit {
		return b[:start+limit]
	}
	return b
}
