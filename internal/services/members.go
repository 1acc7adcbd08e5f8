package services

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// Members indexes the top-level members of a request envelope, so that a
// path whose first key names a member runs on that member's bytes alone
// instead of scanning the envelope from its first byte: a lookup of
// "response.data" skips neither the contract nor the arguments. On a valid
// JSON envelope (the host's are: every raw member it splices in is valid
// JSON) it answers exactly what gjson answers on the whole envelope; a
// path whose first segment is not a plain key (a wildcard, a modifier, a
// query, an escaped key) runs on the whole envelope as before.
//
// The index is either built from the envelope by one pass over it (Reset),
// or given member by member by whoever encoded the envelope (SetParts, Add,
// AddView), which then costs no pass at all: the state views are indexed
// one level down, so that "state.<view>.…" runs on the view alone.
//
// The results alias the envelope's bytes, or the bytes a member was added
// with: copy what must outlive them, unless Stable says they need not be.
// A Members is for one goroutine at a time.
type Members struct {
	req    string
	shared []Member // members given by reference (AddShared), searched first
	keys   []string
	vals   []gjson.Result
	firm   []bool // vals[i] lives in memory that outlives the call
	built  bool
	// scan says the request has a top-level key twice (only a raw request
	// given to Reset can): gjson's answer for a path on such a key may come
	// from any of them, so every path scans the request
	scan bool
	// views indexes the state member's views when it was given by parts.
	viewKeys []string
	viewVals []gjson.Result
	hasState bool
	// last answer's stability (see Stable)
	stable bool
	// memo keeps the last answers into large members: a guard reads the
	// same subtree (an extract of the response) several times, and gjson
	// scans to its end each time to find it
	memo  [memoPaths]memoAnswer
	memoN int
}

// memoPaths bounds the answers a Members keeps; memoBytes is the size of
// a member worth keeping answers into.
const (
	memoPaths = 4
	memoBytes = 512
)

type memoAnswer struct {
	path   []byte // a copy, its buffer reused
	r      gjson.Result
	stable bool
}

// Reset points the index at req, to be built from it on first use. req
// must not change until the next Reset.
func (m *Members) Reset(req []byte) {
	m.SetParts(req)
	m.built = false
}

// SetParts points the index at req with no member yet: the encoder of req
// adds them (Add, AddView) in req's order, and req is scanned only for
// the paths the index does not answer.
func (m *Members) SetParts(req []byte) {
	m.req = unsafe.String(unsafe.SliceData(req), len(req))
	clear(m.vals)
	clear(m.viewVals)
	m.shared = nil
	m.keys, m.vals, m.firm, m.built, m.scan = m.keys[:0], m.vals[:0], m.firm[:0], true, false
	m.viewKeys, m.viewVals, m.hasState, m.stable = m.viewKeys[:0], m.viewVals[:0], false, false
	for i := range m.memoN {
		m.memo[i].r = gjson.Result{}
	}
	m.memoN = 0
}

// Add indexes a member whose value v is the one in req. firm says v's
// bytes outlive the call (they are not in a buffer reused after it).
func (m *Members) Add(key string, v gjson.Result, firm bool) {
	m.keys = append(m.keys, key)
	m.vals = append(m.vals, v)
	m.firm = append(m.firm, firm)
}

// Member is one member of an envelope, as AddShared takes them: its key,
// its value in the envelope (or bytes equal to it), and whether the value's
// bytes outlive the call.
type Member struct {
	Key  string
	V    gjson.Result
	Firm bool
}

// AddShared indexes the members ms without copying them: an encoder that
// hands the same members to every guard of a phase indexes them once.
// ms must not change until the next SetParts or Reset, and no key in it
// may be added again (Add, AddView): their order against the added ones
// is then of no account.
func (m *Members) AddShared(ms []Member) { m.shared = ms }

// AddView indexes one view of the state member, whose bytes outlive the
// call; the first view added marks the state member as present.
func (m *Members) AddView(key string, v gjson.Result) {
	m.hasState = true
	m.viewKeys = append(m.viewKeys, key)
	m.viewVals = append(m.viewVals, v)
}

// StateMember marks a state member present, as an object of the views
// added by AddView (maybe none).
func (m *Members) StateMember() { m.hasState = true }

// Value is what gjson makes of a member's raw bytes (valid JSON, maybe
// with surrounding whitespace): the value Add and AddView take.
func Value(raw []byte) gjson.Result {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	s := unsafe.String(unsafe.SliceData(raw[i:j]), j-i)
	if s != "" && (s[0] == '{' || s[0] == '[') {
		return gjson.Result{Type: gjson.JSON, Raw: s}
	}
	return gjson.Parse(s)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (m *Members) build() {
	m.built = true
	gjson.Parse(m.req).ForEach(func(k, v gjson.Result) bool {
		for _, seen := range m.keys {
			if seen == k.Str {
				// gjson answers "a" with the first of duplicate keys but
				// "a.b" with the first "a" that has a "b": scan them all
				m.scan = true
				return false
			}
		}
		m.Add(k.Str, v, false)
		return true
	})
}

// Query is Query on the indexed envelope, without copying the result.
func (m *Members) Query(path string) (gjson.Result, error) {
	if err := CheckPath(path); err != nil {
		return gjson.Result{}, err
	}
	return m.get(path), nil
}

// Stable reports whether the last answer of Query lives in memory that
// outlives the call (a member added as firm, a view), so that it needs no
// copy to be kept.
func (m *Members) Stable() bool { return m.stable }

// get evaluates a checked path.
func (m *Members) get(path string) gjson.Result {
	m.stable = false
	first, rest, ok := firstKey(path)
	if !ok || len(m.req) == 0 || m.req[0] != '{' {
		return gjson.Get(m.req, path)
	}
	if !m.built {
		m.build()
	}
	if m.scan {
		return gjson.Get(m.req, path)
	}
	if first == "state" && m.hasState {
		return m.state(path, rest)
	}
	for i := range m.shared {
		if c := &m.shared[i]; c.Key == first {
			return m.member(c.V, c.Firm, path, rest)
		}
	}
	for i, k := range m.keys {
		if k == first {
			return m.member(m.vals[i], m.firm[i], path, rest)
		}
	}
	return gjson.Result{}
}

// member is the answer for path, the rest of it on a member's value v,
// from the memo when the member is large.
func (m *Members) member(v gjson.Result, firm bool, path, rest string) gjson.Result {
	if rest == "" || len(v.Raw) < memoBytes {
		r := member(v, rest)
		m.stable = firm && !aliases(r.Raw, path)
		return r
	}
	for i := range m.memoN {
		if a := &m.memo[i]; string(a.path) == path {
			m.stable = a.stable
			return a.r
		}
	}
	r := member(v, rest)
	m.stable = firm && !aliases(r.Raw, path)
	if !aliases(r.Raw, path) {
		// the oldest answer makes room, its path's buffer reused
		last := m.memo[memoPaths-1]
		copy(m.memo[1:], m.memo[:memoPaths-1])
		m.memo[0] = memoAnswer{path: append(last.path[:0], path...), r: r, stable: m.stable}
		m.memoN = min(m.memoN+1, memoPaths)
	}
	return r
}

// aliases reports whether the answer a's bytes lie inside the path's. A
// literal (`!true`, `!{…}`) answers bytes of the path, which the caller
// may reuse as soon as the query returns (the host copies a guest's path
// into a buffer of the call's), so such an answer is never stable; gjson's
// other answers are bytes of the member or strings it allocated, which
// nothing rewrites.
func aliases(a, path string) bool {
	if a == "" || path == "" {
		return false
	}
	p, q := uintptr(unsafe.Pointer(unsafe.StringData(a))), uintptr(unsafe.Pointer(unsafe.StringData(path)))
	return p < q+uintptr(len(path)) && q < p+uintptr(len(a))
}

// member evaluates the rest of a path on a member's value.
func member(v gjson.Result, rest string) gjson.Result {
	switch {
	case rest == "":
		return v
	case v.Type != gjson.JSON:
		return gjson.Result{} // a scalar has no members
	}
	return gjson.Get(v.Raw, rest)
}

// state evaluates "state.<view>.…" on the view, and any other path on the
// state member on the whole envelope.
func (m *Members) state(path, rest string) gjson.Result {
	view, sub, ok := escapedKey(rest)
	if !ok {
		return gjson.Get(m.req, path)
	}
	for i, k := range m.viewKeys {
		if unescapedIs(view, k) {
			r := member(m.viewVals[i], sub)
			m.stable = !aliases(r.Raw, path)
			return r
		}
	}
	return gjson.Result{}
}

// firstKey splits a path at the end of its first segment when that segment
// is a plain key, one gjson matches only literally and that ends at a '.'
// or at the end of the path, before a plain rest; ok is false for any
// other path.
func firstKey(path string) (first, rest string, ok bool) {
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '.':
			return split(path, i)
		case !plainKeyByte[c]:
			return "", "", false
		}
	}
	return path, "", path != ""
}

// escapedKey is firstKey for a segment that may hold '\'-escaped bytes
// (a view's name, "state\.evidence"): first is the segment as written.
func escapedKey(path string) (first, rest string, ok bool) {
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\':
			if i+1 == len(path) {
				return "", "", false
			}
			i++
		case c == '.':
			return split(path, i)
		case !plainKeyByte[c]:
			return "", "", false
		}
	}
	return path, "", path != ""
}

// unescapedIs reports whether the segment seg, its '\' escapes removed, is
// key.
func unescapedIs(seg, key string) bool {
	j := 0
	for i := 0; i < len(seg); i++ {
		if seg[i] == '\\' {
			i++
		}
		if j >= len(key) || seg[i] != key[j] {
			return false
		}
		j++
	}
	return j == len(key)
}

// split cuts a path at the '.' at i, unless gjson would read what follows
// as a pipe (a modifier, a multipath, a literal), which it applies even to
// a missing member.
func split(path string, i int) (first, rest string, ok bool) {
	if i == 0 || i == len(path)-1 {
		return "", "", false
	}
	switch path[i+1] {
	case '@', '[', '{', '!':
		return "", "", false
	}
	return path[:i], path[i+1:], true
}

// plainKeyByte are the bytes a plain first key is made of: letters, digits,
// '_' and '-' (every member name of a request envelope).
var plainKeyByte = func() (m [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		m[c], m[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		m[c] = true
	}
	m['_'], m['-'] = true, true
	return m
}()
