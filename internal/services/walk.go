package services

import (
	"encoding/binary"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/jsonitems"

	"github.com/tidwall/gjson"
)

// MaxWalkLeaves bounds the leaves one walk answers.
const MaxWalkLeaves = 10000

// Kinds of the value a walk reads (the answer's first byte).
const (
	WalkMissing byte = 0
	WalkNull         = jsonitems.KindNull
	WalkFalse        = jsonitems.KindFalse
	WalkTrue         = jsonitems.KindTrue
	WalkNumber       = jsonitems.KindNumber
	WalkString       = jsonitems.KindString
	WalkArray        = jsonitems.KindArray
	WalkObject       = jsonitems.KindObject
)

// Walk is the walk primitive: one pass over the JSON value at a gjson path
// of the request (after CheckPath, ErrPath otherwise), answering what a
// guest would otherwise find by walking the value itself several times:
//
//   - 1 byte: the value's kind (WalkMissing when the path matches nothing,
//     else one of WalkNull … WalkObject);
//   - 4 bytes little-endian: its size — an array's items, an object's
//     members, 0 for a scalar;
//   - 4 bytes: n, the number of leaves that follow;
//   - n leaves, each a 4-byte length and that many bytes: the distinct
//     non-null scalar leaves of the value in document order, each as its
//     text (a string unescaped, an integer as written, another number in
//     its shortest decimal form, true or false), two
//     leaves with the same text counted once, at most limit of them
//     (limit is capped at MaxWalkLeaves; 0 answers the kind and size only).
//
// The work is one pass over the value's bytes, and the answer is at most
// the value's size plus 8 bytes per leaf.
func Walk(req []byte, path string, limit int) ([]byte, error) {
	v, err := Query(req, path)
	if err != nil {
		return nil, err
	}
	return WalkValue(v, limit), nil
}

// WalkValue is Walk on a value already read.
func WalkValue(v gjson.Result, limit int) []byte {
	limit = min(max(limit, 0), MaxWalkLeaves)
	out := make([]byte, 9, 9+min(len(v.Raw), 4096, 64*limit))
	out[0] = walkKind(v)
	size := 0
	if v.IsArray() || v.IsObject() {
		v.ForEach(func(_, _ gjson.Result) bool { size++; return true })
	}
	binary.LittleEndian.PutUint32(out[1:], uint32(size))
	if limit == 0 || !v.Exists() {
		return out
	}
	w := walker{out: out, limit: limit}
	w.leaves(v)
	w.release()
	binary.LittleEndian.PutUint32(w.out[5:], uint32(w.n))
	return w.out
}

// AppendLeaves appends Walk's leaves of v (at most limit, capped at
// MaxWalkLeaves) as a JSON array of strings, as abi.Marshal writes them.
func AppendLeaves(b []byte, v gjson.Result, limit int) []byte {
	w := walker{out: append(b, '['), limit: min(max(limit, 0), MaxWalkLeaves), json: true}
	if w.limit > 0 && v.Exists() {
		w.leaves(v)
		w.release()
	}
	return append(w.out, ']')
}

// seenSets are the walkers' sets, kept for the next walk.
var seenSets = sync.Pool{New: func() any { return make(map[string]struct{}, 64) }}

// release gives back the walker's set, emptied (its keys point into the
// request).
func (w *walker) release() {
	if w.seen != nil && len(w.seen) <= 4096 {
		clear(w.seen)
		seenSets.Put(w.seen)
	}
	w.seen = nil
}

func walkKind(v gjson.Result) byte {
	switch {
	case !v.Exists():
		return WalkMissing
	case v.IsArray():
		return WalkArray
	case v.IsObject():
		return WalkObject
	}
	switch v.Type {
	case gjson.Null:
		return WalkNull
	case gjson.False:
		return WalkFalse
	case gjson.True:
		return WalkTrue
	case gjson.Number:
		return WalkNumber
	}
	return WalkString
}

// walker collects distinct leaves: searched in order while few, then
// through a set.
type walker struct {
	out   []byte
	n     int
	limit int
	list  []string
	seen  map[string]struct{}
	json  bool // the leaves are appended as JSON strings, comma-separated
}

func (w *walker) leaves(v gjson.Result) bool {
	if (v.IsArray() || v.IsObject()) && w.n == 0 && len(w.list) == 0 && w.seen == nil {
		if more, ok := w.scan(v.Raw); ok {
			return more
		}
	}
	return w.walk(v)
}

// walk is leaves through gjson's ForEach, for any input gjson reads.
func (w *walker) walk(v gjson.Result) bool {
	switch {
	case v.IsArray() || v.IsObject():
		more := true
		v.ForEach(func(_, x gjson.Result) bool {
			more = w.walk(x)
			return more
		})
		return more
	case v.Type == gjson.Null:
		return true
	}
	return w.leaf(v.String())
}

// leaf adds the text s of a leaf unless it has it, and says whether there
// is room for more.
func (w *walker) leaf(s string) bool {
	if w.has(s) {
		return true
	}
	switch {
	case w.json && w.n > 0:
		w.out = abi.AppendJSONString(append(w.out, ','), s, false)
	case w.json:
		w.out = abi.AppendJSONString(w.out, s, false)
	default:
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(len(s)))
		w.out = append(w.out, s...)
	}
	w.n++
	return w.n < w.limit
}

const walkLinear = 16

func (w *walker) has(s string) bool {
	if w.seen == nil {
		for _, x := range w.list {
			if x == s {
				return true
			}
		}
		if w.list == nil {
			w.list = make([]string, 0, walkLinear+1)
		}
		w.list = append(w.list, s)
		if len(w.list) > walkLinear {
			w.seen = seenSets.Get().(map[string]struct{})
			for _, x := range w.list {
				w.seen[x] = struct{}{}
			}
		}
		return false
	}
	if _, ok := w.seen[s]; ok {
		return true
	}
	w.seen[s] = struct{}{}
	return false
}
