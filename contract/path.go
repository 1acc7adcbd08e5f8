package contract

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ParamPath is a parameter path of §5.1: dot-separated names where a trailing
// "[]" means "every item of this array": title, orderInfo.taxNo,
// lines[].goodsCode. A purely numeric segment addresses an array index.
type ParamPath struct {
	raw  string
	segs []pathSeg
	// plain is set by the parser for a path without "[]": its one slot's
	// concrete path and gjson path, so Expand builds neither per call.
	plain         bool
	dotted, gpath string
}

type pathSeg struct {
	name string
	each bool // the segment ends in []
}

// ParseParamPath parses a parameter path; it fails on empty segments and on
// brackets anywhere but a trailing "[]".
func ParseParamPath(s string) (ParamPath, error) {
	p, problem := parseParamPath(s)
	if problem != "" {
		return ParamPath{}, &pathError{path: s, problem: problem}
	}
	return p, nil
}

type pathError struct{ path, problem string }

func (e *pathError) Error() string {
	return fmt.Sprintf("contract: parameter path %q: %v: %s", e.path, ErrBadParamPath, e.problem)
}

func (e *pathError) Unwrap() error { return ErrBadParamPath }

// pathProblem is the bare problem of a ParseParamPath error.
func pathProblem(err error) string {
	if pe, ok := err.(*pathError); ok {
		return pe.problem
	}
	return err.Error()
}

func parseParamPath(s string) (ParamPath, string) {
	if s == "" {
		return ParamPath{}, "empty"
	}
	parts := strings.Split(s, ".")
	p := ParamPath{raw: s, segs: make([]pathSeg, 0, len(parts))}
	for _, part := range parts {
		seg := pathSeg{name: part}
		if n, ok := strings.CutSuffix(part, "[]"); ok {
			seg = pathSeg{name: n, each: true}
		}
		if seg.name == "" {
			return ParamPath{}, "empty segment"
		}
		if strings.ContainsAny(seg.name, "[]") {
			return ParamPath{}, "brackets other than a trailing []"
		}
		p.segs = append(p.segs, seg)
	}
	p.setPlain()
	return p, ""
}

// Plain reports a path without "[]", with the concrete path of its one
// slot and the gjson path that reads it (its segments escaped): Expand's
// one slot is Slot{Path: dotted, Value: gjson.GetBytes(doc, gpath)}.
func (p ParamPath) Plain() (dotted, gpath string, ok bool) {
	return p.dotted, p.gpath, p.plain
}

// setPlain prepares the one slot of a path without "[]".
func (p *ParamPath) setPlain() {
	for _, s := range p.segs {
		if s.each {
			return
		}
	}
	names := segNames(p.segs)
	p.plain, p.dotted, p.gpath = true, strings.Join(names, "."), joinEscaped(names)
}

// MustParamPath is ParseParamPath for literals in tests and examples; it panics on error.
func MustParamPath(s string) ParamPath {
	p, err := ParseParamPath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the path as written.
func (p ParamPath) String() string { return p.raw }

// IsZero reports whether the path is empty.
func (p ParamPath) IsZero() bool { return len(p.segs) == 0 }

// HasArray reports whether the path contains "[]".
func (p ParamPath) HasArray() bool {
	for _, s := range p.segs {
		if s.each {
			return true
		}
	}
	return false
}

// Leaf returns the last segment's name without "[]": goodsCode for lines[].goodsCode.
func (p ParamPath) Leaf() string {
	if len(p.segs) == 0 {
		return ""
	}
	return p.segs[len(p.segs)-1].name
}

// gjsonPath renders the path for gjson; "[]" becomes "#" so that the result
// collects every item.
func (p ParamPath) gjsonPath() string {
	var b strings.Builder
	for i, s := range p.segs {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(escapeSeg(s.name))
		if s.each {
			b.WriteString(".#")
		}
	}
	return b.String()
}

// Get returns the value at the path. With "[]" it returns the array of the
// items' values (nested arrays for several "[]").
func (p ParamPath) Get(doc []byte) gjson.Result {
	if len(p.segs) == 0 {
		return gjson.Result{}
	}
	return gjson.GetBytes(doc, p.gjsonPath())
}

// Slot is one concrete location a parameter path expands to.
type Slot struct {
	Path  string       // concrete dot path with indexes, e.g. lines.0.goodsCode
	Index []int        // the index chosen for each "[]", in order
	Value gjson.Result // the current value; may not exist
}

// Expand lists the concrete locations of the path in doc: one per existing
// item for every "[]"; a path without "[]" yields exactly one slot.
func (p ParamPath) Expand(doc []byte) []Slot {
	if p.plain { // one slot, its paths made by the parser
		return []Slot{{Path: p.dotted, Value: gjson.GetBytes(doc, p.gpath)}}
	}
	var out []Slot
	var walk func(segs []pathSeg, prefix []string, idx []int)
	walk = func(segs []pathSeg, prefix []string, idx []int) {
		for i, s := range segs {
			if !s.each {
				continue
			}
			head := append(append([]string{}, prefix...), segNames(segs[:i+1])...)
			arr := gjson.GetBytes(doc, joinEscaped(head))
			if !arr.IsArray() {
				return
			}
			for n := range len(arr.Array()) {
				walk(segs[i+1:], append(head, strconv.Itoa(n)), append(append([]int{}, idx...), n))
			}
			return
		}
		full := append(append([]string{}, prefix...), segNames(segs)...)
		esc := joinEscaped(full)
		out = append(out, Slot{Path: strings.Join(full, "."), Index: idx, Value: gjson.GetBytes(doc, esc)})
	}
	walk(p.segs, nil, nil)
	return out
}

// At returns the concrete path for the given indexes, one per "[]".
func (p ParamPath) At(index ...int) (string, bool) {
	parts := make([]string, 0, len(p.segs)+len(index))
	k := 0
	for _, s := range p.segs {
		parts = append(parts, s.name)
		if s.each {
			if k >= len(index) {
				return "", false
			}
			parts = append(parts, strconv.Itoa(index[k]))
			k++
		}
	}
	return strings.Join(parts, "."), k == len(index)
}

// arrayPrefix returns the path up to and including the first "[]" segment
// (without the []) and the remainder after it.
func (p ParamPath) arrayPrefix() (head ParamPath, rest ParamPath, ok bool) {
	for i, s := range p.segs {
		if s.each {
			h := append([]pathSeg{}, p.segs[:i+1]...)
			h[i].each = false
			return ParamPath{raw: joinSegs(h), segs: h}, ParamPath{raw: joinSegs(p.segs[i+1:]), segs: p.segs[i+1:]}, true
		}
	}
	return ParamPath{}, ParamPath{}, false
}

func joinSegs(segs []pathSeg) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.name
		if s.each {
			parts[i] += "[]"
		}
	}
	return strings.Join(parts, ".")
}

func segNames(segs []pathSeg) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.name
	}
	return out
}

// SetRaw writes raw JSON at a concrete dot path (no "[]"), creating parents.
func SetRaw(doc []byte, concrete string, raw []byte) ([]byte, error) {
	out, err := sjson.SetRawBytes(doc, joinEscaped(strings.Split(concrete, ".")), raw)
	if err != nil {
		return doc, fmt.Errorf("contract: set %s: %w", concrete, err)
	}
	return out, nil
}

// GetDot reads a response or data path written in the spec's dot notation
// (data.records, tag_list.0.id). Characters gjson treats specially are taken
// literally; "" returns the whole document.
func GetDot(doc []byte, dot string) gjson.Result {
	if dot == "" {
		return gjson.ParseBytes(doc)
	}
	return gjson.GetBytes(doc, dotPath(dot))
}

// getDotView is GetDot without copying the value out of doc: the result
// aliases doc.
func getDotView(doc []byte, dot string) gjson.Result {
	return getDotResult(gjson.Parse(unsafe.String(unsafe.SliceData(doc), len(doc))), dot)
}

func getDotResult(r gjson.Result, dot string) gjson.Result {
	if dot == "" {
		return r
	}
	return r.Get(dotPath(dot))
}

// dotPath is the gjson path of a concrete dot path: its segments escaped,
// or the dot path itself when no segment needs it.
func dotPath(dot string) string {
	if !strings.ContainsAny(dot, segSyntax) {
		return dot
	}
	return joinEscaped(strings.Split(dot, "."))
}

// segSyntax is what escapeSeg escapes but the separator.
const segSyntax = `\|#@*?!=<>%(),:{}[]"~'`

func joinEscaped(parts []string) string {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = escapeSeg(p)
	}
	return strings.Join(esc, ".")
}

// escapeSeg escapes every character gjson or sjson would interpret.
func escapeSeg(s string) string {
	if !strings.ContainsAny(s, `\.|#@*?!=<>%(),:{}[]"~'`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.|#@*?!=<>%(),:{}[]"~'`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hasValue is the spec's "has a value": present, not null, not "".
func hasValue(r gjson.Result) bool {
	if !r.Exists() || r.Type == gjson.Null {
		return false
	}
	return !(r.Type == gjson.String && r.Str == "")
}
