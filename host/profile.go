package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// GuestProfile measures where a guest's time goes, function by function:
// a host built with Options.Profile compiles every direct-ABI module with a
// wazero function listener that times each guest function's entry and
// exit and keeps the time spent in the function itself (its self time)
// under its whole call path, rooted at the plugin's name. WriteTo writes it
// as a pprof profile (sample types calls/count and time/nanoseconds), so
// `go tool pprof -top` or `-focus` read it like a CPU profile.
//
// It is a measuring instrument, not a production mode: every guest call
// pays two listener calls and a lock, so absolute times are inflated. The
// profile measures that price when it is made and takes half of it from
// each call's own time and gives the other half to its caller, so that a
// small function called often is not overstated; the split between
// functions is what it is for.
// Host functions a guest calls are counted in the calling guest function.
// A host with a profile compiles without the compilation cache (a cached
// module has no listener calls compiled in).
type GuestProfile struct {
	over  time.Duration // the listener's price per call, measured
	mu    sync.Mutex
	roots map[string]*profNode   // by plugin ref
	live  map[api.Module]*pstack // the call path of each instance in a call
}

// NewGuestProfile returns an empty profile to pass as Options.Profile.
func NewGuestProfile() *GuestProfile {
	p := &GuestProfile{roots: map[string]*profNode{}, live: map[api.Module]*pstack{}}
	// Calibrate: the time of a Before and After pair around nothing.
	l := &profListener{p: p, idx: 0, name: "calibrate"}
	const n = 20000
	start := time.Now()
	for range n {
		l.Before(context.Background(), nil, nil, nil, nil)
		l.exit(nil)
	}
	p.over = time.Since(start) / n
	p.roots = map[string]*profNode{}
	return p
}

type profNode struct {
	name     string
	parent   *profNode
	children map[uint32]*profNode // by function index
	self     int64                // nanoseconds
	calls    int64
}

func (n *profNode) child(idx uint32, name string) *profNode {
	c := n.children[idx]
	if c == nil {
		c = &profNode{name: name, parent: n, children: map[uint32]*profNode{}}
		n.children[idx] = c
	}
	return c
}

type pframe struct {
	node  *profNode
	start time.Time
	inner time.Duration // time of the callees
	body  bool
}

type pstack struct{ frames []pframe }

// NewFunctionListener implements experimental.FunctionListenerFactory.
func (p *GuestProfile) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	if _, _, imported := def.Import(); imported {
		return nil
	}
	// The call-stack bound (callstack.go) moves each function's body to a
	// new function without a name, behind a wrapper with the function's
	// index and name: a body's time is its wrapper's.
	name, body := def.Name(), false
	if name == "" {
		name, body = fmt.Sprintf("$%d", def.Index()), true
	}
	return &profListener{p: p, idx: def.Index(), name: name, body: body}
}

type profListener struct {
	p    *GuestProfile
	idx  uint32
	name string
	body bool // a moved body, counted in its wrapper
}

func (l *profListener) Before(ctx context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	now := time.Now()
	p := l.p
	p.mu.Lock()
	s := p.live[mod]
	if s == nil {
		s = &pstack{}
		p.live[mod] = s
	}
	var parent *profNode
	if n := len(s.frames); n > 0 {
		parent = s.frames[n-1].node
		if l.body {
			s.frames = append(s.frames, pframe{node: parent, start: now, body: true})
			p.mu.Unlock()
			return
		}
	} else {
		ref := "(no call)"
		if st := stateFrom(ctx); st != nil {
			ref = st.plugin.ref
		}
		parent = p.roots[ref]
		if parent == nil {
			parent = &profNode{name: ref, children: map[uint32]*profNode{}}
			p.roots[ref] = parent
		}
	}
	s.frames = append(s.frames, pframe{node: parent.child(l.idx, l.name), start: now})
	p.mu.Unlock()
}

func (l *profListener) After(_ context.Context, mod api.Module, _ api.FunctionDefinition, _ []uint64) {
	l.exit(mod)
}

func (l *profListener) Abort(_ context.Context, mod api.Module, _ api.FunctionDefinition, _ error) {
	l.exit(mod)
}

func (l *profListener) exit(mod api.Module) {
	now := time.Now()
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.live[mod]
	if s == nil || len(s.frames) == 0 {
		return
	}
	f := s.frames[len(s.frames)-1]
	s.frames = s.frames[:len(s.frames)-1]
	total := now.Sub(f.start)
	// Half the listener's price falls inside the measured span, half in
	// the caller's.
	f.node.self += int64(max(total-p.over/2-f.inner, 0))
	if !f.body {
		f.node.calls++
	}
	if n := len(s.frames); n > 0 {
		s.frames[n-1].inner += total + p.over/2
	} else {
		delete(p.live, mod)
	}
}

// Reset forgets what was measured so far (say, a warm-up).
func (p *GuestProfile) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roots = map[string]*profNode{}
}

// WriteTo writes the profile in pprof's protobuf encoding (uncompressed,
// which pprof reads as well).
func (p *GuestProfile) WriteTo(w io.Writer) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var e pprofEncoder
	e.str("")
	e.valueType("calls", "count")
	e.valueType("time", "nanoseconds")
	refs := make([]string, 0, len(p.roots))
	for r := range p.roots {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	for _, r := range refs {
		root := p.roots[r]
		e.walk(root, nil)
	}
	e.functionsAndLocations()
	e.msg = appendVarintField(e.msg, 14, uint64(e.str("time"))) // default_sample_type
	out := append(e.msg, e.strings...)
	n, err := w.Write(out)
	if err != nil {
		return int64(n), fmt.Errorf("host: profile: %w", err)
	}
	return int64(n), nil
}

// pprofEncoder writes the few messages of profile.proto a profile needs.
type pprofEncoder struct {
	msg     []byte
	strings []byte // the string table, written last
	strIdx  map[string]int
	nstr    int
	funcs   map[string]uint64 // name -> function (and location) id
	order   []string
}

func (e *pprofEncoder) str(s string) int {
	if e.strIdx == nil {
		e.strIdx = map[string]int{}
	}
	if i, ok := e.strIdx[s]; ok {
		return i
	}
	i := e.nstr
	e.nstr++
	e.strIdx[s] = i
	e.strings = appendField(e.strings, 6, []byte(s))
	return i
}

func (e *pprofEncoder) field(num int, body []byte) { e.msg = appendField(e.msg, num, body) }

func (e *pprofEncoder) valueType(typ, unit string) {
	var b []byte
	b = appendVarintField(b, 1, uint64(e.str(typ)))
	b = appendVarintField(b, 2, uint64(e.str(unit)))
	e.field(1, b)
}

func (e *pprofEncoder) fn(name string) uint64 {
	if e.funcs == nil {
		e.funcs = map[string]uint64{}
	}
	if id, ok := e.funcs[name]; ok {
		return id
	}
	id := uint64(len(e.funcs) + 1)
	e.funcs[name] = id
	e.order = append(e.order, name)
	return id
}

// walk emits a sample for every node with time of its own; path is the
// location ids from the root down.
func (e *pprofEncoder) walk(n *profNode, path []uint64) {
	path = append(path, e.fn(n.name))
	if n.self > 0 || n.calls > 0 {
		var locs, vals []byte
		for i := len(path) - 1; i >= 0; i-- { // leaf first
			locs = binary.AppendUvarint(locs, path[i])
		}
		vals = binary.AppendUvarint(vals, uint64(n.calls))
		vals = binary.AppendUvarint(vals, uint64(max(n.self, 0)))
		var b []byte
		b = appendField(b, 1, locs)
		b = appendField(b, 2, vals)
		e.field(2, b)
	}
	idx := make([]uint32, 0, len(n.children))
	for i := range n.children {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		e.walk(n.children[i], path)
	}
}

// functionsAndLocations writes one function and one location (same id)
// per name.
func (e *pprofEncoder) functionsAndLocations() {
	for i, name := range e.order {
		id := uint64(i + 1)
		var line []byte
		line = appendVarintField(line, 1, id)
		var loc []byte
		loc = appendVarintField(loc, 1, id)
		loc = appendField(loc, 4, line)
		e.field(4, loc)
		var f []byte
		f = appendVarintField(f, 1, id)
		f = appendVarintField(f, 2, uint64(e.str(name)))
		f = appendVarintField(f, 3, uint64(e.str(name)))
		e.field(5, f)
	}
}

// appendField appends a length-delimited field (wire type 2).
func appendField(b []byte, num int, body []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

func appendVarintField(b []byte, num int, v uint64) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3)
	return binary.AppendUvarint(b, v)
}
