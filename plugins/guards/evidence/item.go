package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

// Evidence defaults.
const (
	// Budget is the default size budget of a payload in bytes (config
	// maxPayloadBytes).
	Budget = 16 << 10
	// Excerpt is the size of an item's excerpt in bytes.
	Excerpt = 200
	// Locator bounds an item's locator (the tool and its canonical
	// arguments) in bytes, so that a call with arguments near the input
	// limit still has an item within the plugin's output limit.
	Locator = 1 << 10
	// MaxValues bounds the flattened extract values of one item.
	MaxValues = 1000
)

// call is what the guard derives from an after-phase request.
type call struct {
	req  envelope.Reader
	tool string
	// size is the response's length; resp its bytes, read from the
	// request only once asked (response): a guest is not given them for
	// what the host answers (the judge's path, the hash, the payload).
	size     int
	resp     []byte
	respRead bool
	status   abi.Outcome
	ok       bool // business ok
	budget   int
	id       string
	toolSpec *contract.Tool
	callID   string
	rawArgs  gjson.Result // bound arguments
	args     string       // canonical bound arguments, once asked (canonArgs)
	hasArgs  bool
	// argsPath is the envelope path of the bound arguments when the host
	// gives their canonical JSON (canonicalizer), else "".
	argsPath string
	// walkLimit is how many leaves extraction asks the host's walk for.
	walkLimit int
	// lazyArrays leaves an array extract's value in the envelope: its
	// Value is an empty array standing for it (stubs: which, for the first
	// 64 extracts).
	lazyArrays bool
	stubs      uint64
	x          *contract.Extraction
	walked     []*guest.Walked // the host's walk of each extract, when it found them
	paths      []string        // each extract's envelope path, when the host found them
	// compactRaw is whether the response is compact JSON already, and so
	// every raw value taken from it (set by item).
	compactRaw bool
}

// readCall reads what the guard needs of an after-phase request.
func readCall(req envelope.Reader) (*call, error) {
	return read(req, envelope.Get(req, abi.FieldResult+".outcome").String())
}

// read is readCall for a request whose result has the given outcome; it
// reads each value once.
func read(req envelope.Reader, outcome string) (*call, error) {
	tool := envelope.Get(req, abi.FieldTool).String()
	t, err := envelope.Parse(tool, envelope.Get(req, abi.FieldContract))
	if err != nil {
		return nil, err
	}
	e := &call{req: req, tool: tool, toolSpec: t, budget: Budget, walkLimit: MaxValues}
	if s, ok := req.(sizer); ok {
		e.size = max(s.Size(abi.FieldResponse), 0)
	} else {
		e.size = len(e.response())
	}
	if n := envelope.Get(req, "config.maxPayloadBytes").Int(); n > 0 {
		e.budget = int(n)
	}
	var code abi.Code
	if outcome == "FAILED" { // a success has no code: not looked for past its data
		code = abi.Code(envelope.Get(req, abi.FieldResult+".code").String())
	}
	// A call the business or the output schema judged failed still ran and
	// returned: its evidence is SUCCESS with businessOk false (§6.1).
	judged := code == abi.ToolBusinessFailed || code == abi.OutputSchemaMismatch
	switch {
	case outcome == "SUCCESS" || outcome == "FAILED" && (judged || code == abi.FingerprintRepeat):
		e.status = abi.OutcomeSuccess
		e.ok = !judged && envelope.Holds(req, t, e.response)
	case outcome == "FAILED":
		e.status = abi.OutcomeFailed
	default:
		return nil, fmt.Errorf("evidence: evidence of a %s call: only executed calls have evidence", outcome)
	}
	if c, ok := req.(canonicalizer); ok {
		e.argsPath = abi.FieldArgs
		if c.Has(abi.FieldBound) { // envelope.Args prefers the bound arguments
			e.argsPath = abi.FieldBound
		}
	}
	// The arguments' own bytes are read only where they are used: a WRITE
	// tool's entities merge them, and a reader without the host's
	// canonical form canonicalizes them in the guest.
	if e.argsPath == "" || t.IsWrite() {
		e.rawArgs = envelope.Args(req)
	}
	e.callID = envelope.Get(req, abi.FieldCallID).String()
	e.id = e.evidenceID()
	return e, nil
}

// sizer is a Reader whose host gives a value's length (*guest.Call).
type sizer interface {
	Size(path string) int
}

// response is the request's raw response, read once.
func (e *call) response() []byte {
	if !e.respRead {
		e.resp, e.respRead = response(e.req), true
	}
	return e.resp
}

// response is the raw response of the request, nil when it has none. It is
// the bytes of the string the reader answered, not a copy: they are only
// read.
func response(req envelope.Reader) []byte {
	r := envelope.Get(req, abi.FieldResponse)
	if !r.Exists() {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(r.Raw), len(r.Raw))
}

// canonArgs is the canonical JSON of the bound arguments, computed once.
func (e *call) canonArgs() string {
	if !e.hasArgs {
		e.args, e.hasArgs = canonicalArgs(e.req, e.rawArgs), true
	}
	return e.args
}

// canonicalizer is a Reader whose host gives a value's canonical JSON
// (*guest.Call: the canonical primitive).
type canonicalizer interface {
	Has(path string) bool
	Canonical(path string) []byte
}

// canonicalArgs is the canonical JSON of the bound arguments args: from the
// host when it can (re-encoding them inside the guest costs more than the
// host's answer), else the guest's own.
func canonicalArgs(req envelope.Reader, args gjson.Result) string {
	c, ok := req.(canonicalizer)
	if !ok {
		return string(canonical.JSON(args))
	}
	path := abi.FieldArgs
	if c.Has(abi.FieldBound) { // envelope.Args prefers the bound arguments
		path = abi.FieldBound
	}
	return string(c.Canonical(path))
}

// evidenceID is "ev_" and 16 hex digits of the SHA-256 of the call id, so
// that replaying a call gives the same id; a request without a call id
// hashes the tool, the canonical arguments and the response instead.
func (e *call) evidenceID() string {
	h := sha256.New()
	if id := e.callID; id != "" {
		h.Write([]byte(id))
	} else {
		h.Write([]byte(e.tool))
		h.Write([]byte{0})
		h.Write([]byte(e.canonArgs()))
		h.Write([]byte{0})
		h.Write(e.response())
	}
	return "ev_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// hasher is a Reader whose host hashes a value's raw text (*guest.Call:
// the hash primitive).
type hasher interface {
	Hash(path string) ([guest.DigestSize]byte, bool)
}

// contentHash is the hex SHA-256 of the raw response: from the host when it
// can (SHA-256 compiled to wasm is several times slower than the host's),
// else the guest's own.
func (e *call) contentHash() string {
	if h, ok := e.req.(hasher); ok {
		if sum, ok := h.Hash(abi.FieldResponse); ok {
			return hex.EncodeToString(sum[:])
		}
	}
	sum := sha256.Sum256(e.response())
	return hex.EncodeToString(sum[:])
}

// extraction runs the contract's extracts on the response once per call,
// without their entities (entities encodes them as it reads them). When the
// host can, it finds each extract's value and walks it once (its items and
// leaves), so the guest scans none of the response's bytes for them; the
// contract still decides what each extract counts.
func (e *call) extraction() *contract.Extraction {
	if e.x != nil {
		return e.x
	}
	h, ok := e.req.(hostReader)
	if ok && e.toolSpec != nil {
		e.paths = make([]string, len(e.toolSpec.Extracts))
		for i, ex := range e.toolSpec.Extracts {
			e.paths[i] = responsePath(ex.Path)
			if len(e.paths[i]) > guest.MaxPathBytes || strings.ContainsAny(ex.Path, pathSyntax) {
				ok = false
			}
		}
	}
	var x contract.Extraction
	if ok {
		e.walked = make([]*guest.Walked, len(e.toolSpec.Extracts))
		var resp []byte // read only without extracts (their shape)
		if len(e.toolSpec.Extracts) == 0 {
			resp = e.response()
		}
		x = e.toolSpec.ExtractFound(resp, func(i int) (gjson.Result, int) {
			p := e.paths[i]
			w := h.Walk(p, e.walkLimit)
			e.walked[i] = &w
			if w.Kind == guest.WalkMissing {
				return gjson.Result{}, 0
			}
			if e.lazyArrays && w.Kind == guest.WalkArray {
				// not copied in: what is written of it the host copies
				// (spliceItem), and its items come from the host's list
				e.stubs |= 1 << i
				return gjson.Result{Type: gjson.JSON, Raw: "[]"}, w.Size
			}
			return h.Get(p), w.Size
		})
	} else {
		x = e.toolSpec.ExtractValues([]byte(e.rawArgs.Raw), e.response())
	}
	e.x = &x
	return e.x
}

// pathSyntax is what a dot path's segment may hold that gjson reads as
// syntax (contract.GetDot escapes it); an extract path with any of it is
// looked up by the contract inside the guest, so that the host's path
// cannot differ from the contract's.
const pathSyntax = "\\|#@*?!=<>%(),:{}[]\"~'"

// hostReader is a Reader whose host finds a value and walks it
// (*guest.Call: the query and walk primitives).
type hostReader interface {
	walker
	Get(path string) gjson.Result
}

// item builds the EvidenceItem of the call (the evidence.register payload),
// retrieved at the given time (RFC 3339).
func (e *call) item(retrievedAt string) abi.EvidenceItem {
	resp := e.response()
	it := abi.EvidenceItem{
		ID: e.id, SourceType: sourceType(e.req, e.tool), Locator: contract.Truncate([]byte(e.tool+" "+e.canonArgs()), Locator),
		RetrievedAt: retrievedAt, ToolCallID: e.callID,
		Tool: e.tool, Status: e.status, BusinessOK: e.ok, Result: abi.ResultFailure, Size: len(resp),
	}
	if len(resp) > 0 {
		it.ContentHash = e.contentHash()
		if len(resp) > e.budget {
			// Truncate decides on the first Excerpt+1 bytes, so only those
			// are compacted.
			it.Excerpt = contract.Truncate(appendCompact(nil, resp, false, Excerpt+1), Excerpt)
			it.Truncated = true
			it.Payload, _ = json.Marshal(contract.Truncate(resp, e.budget))
			e.compactRaw = false
		} else {
			// The response is compacted once: the payload, the excerpt (its
			// head) and, when compacting left it as it was, every raw value
			// taken from it (extracts, entity attributes) need no pass of
			// their own.
			cr := appendCompact(make([]byte, 0, len(resp)), resp, false, -1)
			it.Excerpt = contract.Truncate(cr[:min(len(cr), Excerpt+1)], Excerpt)
			it.Payload = json.RawMessage(cr)
			e.compactRaw = len(cr) == len(resp)
		}
	}
	if e.ok {
		var l leaves
		x := e.extraction()
		it.Empty = x.Empty
		it.Result = abi.ResultWithData
		if x.Empty {
			it.Result = abi.ResultEmpty
		}
		for i, xi := range x.Items {
			name := xi.Key
			if name == "" {
				name = xi.Path
			}
			if it.Counts == nil {
				it.Extracts, it.Counts = map[string]json.RawMessage{}, map[string]int{}
			}
			it.Counts[name] = xi.Count
			if xi.Value.Exists() {
				it.Extracts[name] = json.RawMessage(xi.Value.Raw)
				it.Values = e.appendLeaves(&l, it.Values, i, xi)
			}
		}
	}
	return it
}

// sourceType is the item's FAILURES_AND_EVIDENCE §4 source type: what the
// plugin's config maps the tool to (config.sourceTypes), else "query": a
// business tool's answer is the result of a query to a system of record,
// and for a write it is that system's record of the write.
func sourceType(req envelope.Reader, tool string) string {
	if s := envelope.Get(req, "config.sourceTypes."+strings.ReplaceAll(tool, ".", `\.`)).String(); s != "" {
		return s
	}
	return "query"
}

// leaves are the values an item's leaves already hold: searched in order
// while few, then through a set (comparing every new leaf with every
// earlier one is quadratic, and inside a guest each comparison is a
// runtime call).
type leaves struct {
	seen map[string]struct{}
}

// linearLeaves is how many values are searched in order before the set
// takes over.
const linearLeaves = 16

func (l *leaves) has(out []string, s string) bool {
	if l.seen == nil {
		for _, x := range out {
			if x == s {
				return true
			}
		}
		if len(out) >= linearLeaves {
			l.seen = make(map[string]struct{}, 4*len(out))
			for _, x := range out {
				l.seen[x] = struct{}{}
			}
		}
		return false
	}
	_, ok := l.seen[s]
	return ok
}

// walker is a Reader whose host walks a value once for its leaves
// (*guest.Call: the walk primitive).
type walker interface {
	Walk(path string, limit int) guest.Walked
}

// appendLeaves adds the leaves of an extract's value: the host walks the
// value in the envelope's response when it can (a guest walking the records
// itself re-parses them leaf by leaf), and the guest keeps the rule —
// which leaves, how they merge across extracts, how many.
func (e *call) appendLeaves(l *leaves, out []string, i int, xi contract.ExtractResult) []string {
	if len(out) >= MaxValues {
		return out
	}
	var got []string
	if i < len(e.walked) && e.walked[i] != nil {
		got = e.walked[i].Leaves // walked when the extract was found
	} else {
		w, ok := e.req.(walker)
		path := responsePath(xi.Path)
		if !ok || len(path) > guest.MaxPathBytes {
			return l.appendLeaves(out, xi.Value)
		}
		// The first MaxValues distinct leaves of each extract hold every
		// one this extract can still add after the earlier extracts'
		// leaves.
		got = w.Walk(path, MaxValues).Leaves
	}
	if len(out) == 0 {
		// The walk's leaves are distinct already: the first extract's are
		// taken as they are (a later one searches them, building the set
		// from them once there are enough).
		return append(out, got[:min(len(got), MaxValues)]...)
	}
	for _, s := range got {
		if l.has(out, s) {
			continue
		}
		out = append(out, s)
		if l.seen != nil {
			l.seen[s] = struct{}{}
		}
		if len(out) >= MaxValues {
			break
		}
	}
	return out
}

// responsePath is the envelope path of an extract's dot path in the
// response.
func responsePath(dot string) string {
	if dot == "" {
		return abi.FieldResponse
	}
	p := abi.FieldResponse
	for seg := range strings.SplitSeq(dot, ".") {
		p += "." + envelope.Escape(seg)
	}
	return p
}

// appendLeaves adds the scalar leaves of r as strings, skipping nulls and
// duplicates, up to MaxValues.
func (l *leaves) appendLeaves(out []string, r gjson.Result) []string {
	if len(out) >= MaxValues {
		return out
	}
	switch {
	case r.IsObject() || r.IsArray():
		r.ForEach(func(_, v gjson.Result) bool {
			out = l.appendLeaves(out, v)
			return len(out) < MaxValues
		})
	case r.Type == gjson.Null:
	default:
		s := r.String()
		if l.has(out, s) {
			return out
		}
		out = append(out, s)
		if l.seen != nil {
			l.seen[s] = struct{}{}
		}
	}
	return out
}

// entities are the entity.record payloads (abi.Entity) of the extracts with
// an entity spec of a business-ok call; a WRITE tool's entities merge its
// arguments under the response (§6.3). A failed call has none. The
// contract's entity rule gives each entity's fields (contract.EachEntity)
// and they are encoded as they come, without an Entity and a map of
// attributes per entity.
func (e *call) entities() [][]byte {
	if !e.ok {
		return nil
	}
	x := e.extraction()
	// A WRITE tool's entities hold values of its arguments too, which the
	// response's compactness says nothing about.
	compact := e.compactRaw && !e.toolSpec.IsWrite()
	// One buffer holds every payload, each a slice of it capped at its own
	// end, instead of a buffer grown from nothing per entity.
	var out [][]byte
	buf := make([]byte, 0, e.size+256)
	e.toolSpec.EachEntityOf([]byte(e.rawArgs.Raw), *x, e.listItems, func(f *contract.EntityFields) {
		start := len(buf)
		buf = appendEntityFields(buf, f, compact)
		out = append(out, buf[start:len(buf):len(buf)])
	})
	return out
}

// listItemsBytes bounds the extract values whose items the host lists for
// the entities: the list is about twice the value, and an answer is held to
// the plugin's output limit; a larger value is parsed in the guest.
const listItemsBytes = 64 << 10

// listItems is the host's list of extract i's items (the items primitive),
// when the host found the extract (extraction) and can list it whole.
func (e *call) listItems(i int) (contract.ItemList, bool) {
	l, ok := e.req.(itemLister)
	if !ok || i >= len(e.walked) || e.walked[i] == nil || i >= len(e.x.Items) {
		return nil, false
	}
	size := len(e.x.Items[i].Value.Raw)
	if e.stubbed(i) {
		size = l.Size(e.paths[i])
	}
	if size > listItemsBytes {
		return nil, false
	}
	n := 1
	if e.walked[i].Kind == guest.WalkArray {
		n = e.walked[i].Size
	}
	if n > guest.MaxItems {
		return nil, false
	}
	its := l.ItemsView(e.paths[i], n)
	if its.Len() != n {
		return nil, false // not the value the extract found
	}
	return &its, true
}

// itemLister is a Reader whose host lists a value's items (*guest.Call).
type itemLister interface {
	ItemsView(path string, limit int) guest.ItemsView
	Size(path string) int
}

// stubbed reports whether extract i's value was left in the envelope
// (lazyArrays): its Value is an empty array standing for it.
func (e *call) stubbed(i int) bool { return i < 64 && e.stubs&(1<<i) != 0 }

// value is extract i's value, read from the host when it was left there.
func (e *call) value(i int) gjson.Result {
	if e.stubbed(i) {
		if h, ok := e.req.(hostReader); ok {
			e.x.Items[i].Value = h.Get(e.paths[i])
		}
		e.stubs &^= 1 << i
	}
	return e.x.Items[i].Value
}

// truncated is the observation of a response over the budget: the result's
// text with a note that the payload was cut and how to read the rest, and
// the data {"truncated":true, "size", "limit", "evidenceId", "head"} where
// head is the first limit bytes of the response.
func (e *call) truncated() (string, []byte, error) {
	l := envelope.Locale(e.req)
	size, limit := strconv.Itoa(e.size), strconv.Itoa(e.budget)
	note := "返回内容共 " + size + " 字节，超过 " + limit + " 字节上限，这里只给出前 " + limit + " 字节（truncated: true）；完整内容已登记为证据 " + e.id + "，用 builtin_evidence_get 分页读取其余部分"
	join := "；"
	if l == abi.LocaleEN {
		note = "the response has " + size + " bytes, over the " + limit + "-byte limit, so only the first " + limit + " bytes are shown (truncated: true); the whole response is evidence " + e.id + ", read the rest page by page with builtin_evidence_get"
		join = "; "
	}
	text := strings.TrimRight(envelope.Get(e.req, abi.FieldResult+".text").String(), "。.！!；; ")
	if text != "" {
		text += join
	}
	text += note
	data, err := json.Marshal(struct {
		Truncated  bool   `json:"truncated"`
		Size       int    `json:"size"`
		Limit      int    `json:"limit"`
		EvidenceID string `json:"evidenceId"`
		Head       string `json:"head"`
	}{true, e.size, e.budget, e.id, contract.Truncate(e.response(), e.budget)})
	if err != nil {
		return "", nil, fmt.Errorf("evidence: truncated data: %w", err)
	}
	return text, data, nil
}
