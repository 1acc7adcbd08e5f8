//go:build !wasip1

package guest

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// topIndex lets the native runner answer a path without scanning the whole
// envelope each time (what each query of the host does): the envelope's
// top-level members are found in one pass, and a path whose first segment
// is a plain key is evaluated on that member only. It gives what
// gjson.GetBytes gives on the whole envelope (TestTopIndex and
// FuzzTopIndex compare them), and steps aside where the two could differ:
// an envelope that is not a valid object or has a top-level key twice, a first
// segment with gjson syntax, a rest with modifiers, queries, wildcards or
// pipes, and a rest below a scalar.
type topIndex struct {
	built bool
	ok    bool // the envelope is an object without a top-level key twice
	keys  []string
	vals  []gjson.Result
}

func (t *topIndex) reset() {
	t.built, t.ok = false, false
	clear(t.vals)
	t.keys, t.vals = t.keys[:0], t.vals[:0]
}

func (t *topIndex) build(req []byte) {
	t.built = true
	raw := unsafe.String(unsafe.SliceData(req), len(req))
	if !gjson.Valid(raw) {
		return // gjson's lenient reading of invalid JSON is left to gjson
	}
	doc := gjson.Parse(raw)
	if !doc.IsObject() {
		return
	}
	t.ok = true
	doc.ForEach(func(k, v gjson.Result) bool {
		for _, seen := range t.keys {
			if seen == k.Str {
				t.ok = false
				return false
			}
		}
		t.keys = append(t.keys, k.Str)
		t.vals = append(t.vals, v)
		return true
	})
}

// plainKey reports whether s is a key gjson reads literally as a path
// segment.
func plainKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// plainRest reports whether the rest of a path is dot-separated non-empty
// segments without gjson syntax but escapes.
func plainRest(rest string) bool {
	return rest != "" && rest[0] != '.' && rest[len(rest)-1] != '.' && rest[len(rest)-1] != '\\' &&
		!strings.Contains(rest, "..") && !strings.ContainsAny(rest, "|@#*?!=<>%(){}[]\"~',:")
}

// get answers path from the index; ok is false when it cannot, and the
// caller asks gjson on the whole envelope. The result owns its bytes, as
// gjson.GetBytes's does.
func (t *topIndex) get(req []byte, path string) (gjson.Result, bool) {
	head, rest, more := strings.Cut(path, ".")
	if !plainKey(head) || more && !plainRest(rest) {
		return gjson.Result{}, false
	}
	if !t.built {
		t.build(req)
	}
	if !t.ok {
		return gjson.Result{}, false
	}
	for i, k := range t.keys {
		if k != head {
			continue
		}
		v := t.vals[i]
		if more {
			if !v.IsObject() && !v.IsArray() {
				return gjson.Result{}, false
			}
			v = v.Get(rest)
		}
		return owned(v), true
	}
	return gjson.Result{}, true
}

// owned copies what a result refers to, so that it outlives the envelope.
func owned(v gjson.Result) gjson.Result {
	if v.Raw == "" {
		return v
	}
	raw := strings.Clone(v.Raw)
	if v.Type == gjson.String && len(raw) >= 2 && raw[1:len(raw)-1] == v.Str {
		v.Str = raw[1 : len(raw)-1]
	} else if v.Type == gjson.String {
		v.Str = strings.Clone(v.Str)
	}
	v.Raw = raw
	return v
}
