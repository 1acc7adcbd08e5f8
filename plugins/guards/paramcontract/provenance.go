package paramcontract

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

// param is what §5.3 finds for one parameter of the contract.
type param struct {
	path     string // the contract's parameter path (lines[].goodsCode)
	name     string // the label, else the path
	present  bool   // every slot has a value (not absent, null or "")
	source   string // the source type when present
	ref      string // what matched: evidence id, entity type:id
	enumOK   bool   // false when an enum is configured and a value is not in it
	required bool
	action   string // missing.action
	tool     string // missing.tool
	message  string // missing.message
	modelOK  bool   // sources contain MODEL
	userOK   bool   // sources contain USER
	bound    bool   // the parameter has from or const
	enum     string // the enum as a JSON array, when !enumOK
}

// provenance does the matching of CONTRACT_SPEC §5.3: for every parameter
// the request's tool contract lists (in path order) it finds whether the
// arguments (bound, else the model's) hold a value, which source the value
// has — the binding's from the request's provenance map when the parameter
// has from or const, else the first of its sources that matches (step 3) —
// and whether it is one of the enum values. An array parameter
// (lines[].goodsCode) has one slot per item; its source is MODEL when any
// item's value is, else the first item's. It returns nothing without a
// contract or parameters.
func (g *guard) provenance(req envelope.Reader) ([]param, error) {
	t, err := envelope.Declared(req)
	if err != nil || t == nil || len(t.Args) == 0 {
		return nil, err
	}
	keys := t.ArgPaths()
	// With only plain parameter paths the host reads each value (under
	// "bound" or "args", as Args chooses), and the arguments are not
	// copied in whole.
	argsPath := ""
	for _, key := range keys {
		if _, gpath, ok := t.Args[key].Path.Plain(); !ok || !envelope.PlainPath(gpath) {
			argsPath = ""
			break
		}
		if argsPath == "" {
			argsPath = abi.FieldArgs
			if has(req, abi.FieldBound) {
				argsPath = abi.FieldBound
			}
		}
	}
	var doc []byte
	if argsPath == "" {
		doc = []byte(envelope.Args(req).Raw)
		if len(strings.TrimSpace(string(doc))) == 0 {
			doc = []byte("{}")
		}
	}
	m := g.newMatcher(req)
	out := make([]param, 0, len(keys))
	for _, key := range keys {
		a := t.Args[key]
		var slots []contract.Slot
		if argsPath != "" {
			dotted, gpath, _ := a.Path.Plain()
			slots = []contract.Slot{{Path: dotted, Value: envelope.Get(req, argsPath+"."+gpath)}}
		} else {
			slots = a.Path.Expand(doc)
		}
		p := param{path: key, name: a.Label, present: len(slots) > 0, enumOK: true, required: a.Required,
			action: string(a.Missing.Action), tool: a.Missing.Tool, message: a.Missing.Message,
			modelOK: slices.Contains(a.Sources, contract.SourceModel), userOK: slices.Contains(a.Sources, contract.SourceUser),
			bound: a.Const != nil || a.From != nil}
		if p.name == "" {
			p.name = key
		}
		for _, s := range slots {
			if !envelope.HasValue(s.Value) {
				p.present = false
			}
		}
		if p.present {
			for j, s := range slots {
				var src, r string
				if p.bound {
					src, r = m.boundSource(s.Path)
				} else {
					src, r = m.match(a, key, s.Path, s.Value)
				}
				if j == 0 || src == string(contract.SourceModel) {
					p.source, p.ref = src, r
				}
				if src == string(contract.SourceModel) {
					break
				}
			}
			if len(a.Enum) > 0 {
				for _, s := range slots {
					if !inEnum(s.Value, a.Enum) {
						p.enumOK = false
					}
				}
			}
		}
		if !p.enumOK {
			p.enum = enumList(a.Enum)
		}
		out = append(out, p)
	}
	return out, nil
}

func enumList(enum []json.RawMessage) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = string(canonical.JSON(gjson.ParseBytes(e)))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func inEnum(v gjson.Result, enum []json.RawMessage) bool {
	for _, e := range enum {
		if envelope.Same(v, gjson.ParseBytes(e)) {
			return true
		}
	}
	return false
}

// has is Has of a reader that has it (*guest.Call), else Get's Exists.
func has(req envelope.Reader, path string) bool {
	if c, ok := req.(*guest.Call); ok {
		return c.Has(path)
	}
	if h, ok := req.(interface{ Has(path string) bool }); ok {
		return h.Has(path)
	}
	return req.Get(path).Exists()
}

// matcher answers the source questions of one request; it reads each state
// view once.
type matcher struct {
	req       envelope.Reader
	normalise func(string) string
	g         *guard
	sc        *envelope.Scope // read on first use, as are prov and expected
	prov      gjson.Result
	provDone  bool
	expected  []string // the current follow-up's expectedFields
	expDone   bool
	messages  []string // recent user messages, normalised
	msgsDone  bool
	evItems   []evItem // successful evidence items, in view order
	evDone    bool
}

func (g *guard) newMatcher(req envelope.Reader) *matcher {
	return &matcher{req: req, normalise: g.normalise, g: g}
}

// The paths of the views the matchers read, made once.
var (
	userMessagesPath   = envelope.StatePath(abi.CapStateConversation, "userMessages")
	expectedFieldsPath = envelope.StatePath(abi.CapStateFollowUp, "current.expectedFields")
)

// userMessages are the recent user messages, normalised. A conversation
// changes by a message at a time while the same messages come with call
// after call, so the guard keeps the last list it normalised, found again
// by the view's text; the list is shared and only read.
func (g *guard) userMessages(raw gjson.Result) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastMsgs != nil && raw.Raw == g.lastRaw {
		return g.lastMsgs
	}
	msgs := []string{}
	for _, s := range raw.Array() {
		msgs = append(msgs, g.normalise(s.String()))
	}
	g.lastRaw, g.lastMsgs = strings.Clone(raw.Raw), msgs
	return msgs
}

// scope is the request's node view, read once.
func (m *matcher) scope() *envelope.Scope {
	if m.sc == nil {
		m.sc = envelope.NewScope(m.req)
	}
	return m.sc
}

// expectedFields are the current follow-up's expectedFields, read once.
func (m *matcher) expectedFields() []string {
	if !m.expDone {
		m.expDone = true
		for _, f := range envelope.Get(m.req, expectedFieldsPath).Array() {
			m.expected = append(m.expected, f.String())
		}
	}
	return m.expected
}

// boundSource is the source ArgBinding recorded for a concrete path, or
// MODEL when the binding found no value (§5.3 step 3, first two rows).
func (m *matcher) boundSource(path string) (string, string) {
	if !m.provDone {
		m.provDone = true
		m.prov = envelope.Get(m.req, abi.FieldProvenance)
	}
	if s := m.prov.Get(envelope.Escape(path)).String(); s != "" {
		return s, ""
	}
	return string(contract.SourceModel), ""
}

// match is step 3 for a parameter without from or const: the first of its
// sources that matches, else MODEL.
func (m *matcher) match(a *contract.Arg, key, path string, v gjson.Result) (string, string) {
	for _, s := range a.Sources {
		var ok bool
		var ref string
		switch s {
		case contract.SourceUser:
			ok = m.user(key, path, v)
		case contract.SourceEvidence:
			ref, ok = m.evidence(v)
		case contract.SourceNodeOutput:
			ok = envelope.Same(v, envelope.DotGet(m.scope().Inputs(), path)) || envelope.Same(v, envelope.DotGet(m.scope().Outputs(), path))
		case contract.SourceShared:
			ok = envelope.Same(v, envelope.DotGet(m.scope().Shared(), path))
		case contract.SourceSession:
			ok = envelope.Same(v, envelope.DotGet(m.scope().Session(), path))
		case contract.SourcePriorTask:
			ref, ok = m.prior(a, v)
		case contract.SourceModel:
			return string(contract.SourceModel), ""
		}
		if ok {
			return string(s), ref
		}
	}
	return string(contract.SourceModel), ""
}

// user: the current follow-up expects the parameter, or a recent user
// message contains the value (both normalised; the value at least two
// characters long).
func (m *matcher) user(key, path string, v gjson.Result) bool {
	if exp := m.expectedFields(); slices.Contains(exp, key) || slices.Contains(exp, path) {
		return true
	}
	if v.IsObject() || v.IsArray() {
		return false
	}
	needle := m.normalise(v.String())
	if utf8.RuneCountInString(needle) < 2 {
		return false
	}
	if !m.msgsDone {
		m.msgsDone = true
		m.messages = m.g.userMessages(envelope.Get(m.req, userMessagesPath))
	}
	for _, msg := range m.messages {
		if strings.Contains(msg, needle) {
			return true
		}
	}
	return false
}

// evidence: the value equals a value extracted by a successful piece of
// this node's or upstream evidence (its values, or any node of its
// extracts).
func (m *matcher) evidence(v gjson.Result) (string, bool) {
	if !m.evDone {
		m.evDone = true
		m.evItems = m.g.evidenceItems(envelope.Get(m.req, evidenceItemsPath))
	}
	var ref string
	for _, item := range m.evItems {
		found := false
		if !v.IsObject() && !v.IsArray() {
			text := v.String()
			for _, x := range item.values {
				if x == text {
					found = true
					break
				}
			}
		}
		if !found {
			item.extracts.ForEach(func(_, x gjson.Result) bool {
				found = contains(x, v)
				return !found
			})
		}
		if found {
			ref = item.id
			break
		}
	}
	return ref, ref != ""
}

// evItem is what the EVIDENCE source reads of one evidence item.
type evItem struct {
	id       string
	values   []string // the texts of its values
	extracts gjson.Result
}

// evidenceItemsPath is the evidence view's items.
var evidenceItemsPath = envelope.StatePath(abi.CapStateEvidence, "items")

// evidenceItems are the items of the evidence view (raw) that ran and
// succeeded in business terms, in view order (envelope.EachEvidence). As
// with the user messages, the guard keeps the last list it read, found
// again by the view's text; it is shared and only read.
func (g *guard) evidenceItems(raw gjson.Result) []evItem {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastEv != nil && raw.Raw == g.lastEvRaw {
		return g.lastEv
	}
	text := strings.Clone(raw.Raw) // the items below read it
	items := []evItem{}
	gjson.Parse(text).ForEach(func(_, item gjson.Result) bool {
		if item.Get("status").String() == abi.OutcomeSuccess.String() && item.Get("businessOk").Bool() {
			it := evItem{id: item.Get("id").String(), extracts: item.Get("extracts")}
			item.Get("values").ForEach(func(_, x gjson.Result) bool {
				it.values = append(it.values, x.String())
				return true
			})
			items = append(items, it)
		}
		return true
	})
	g.lastEvRaw, g.lastEv = text, items
	return items
}

// contains reports whether tree or any value inside it equals v.
func contains(tree, v gjson.Result) bool {
	if envelope.Same(tree, v) {
		return true
	}
	found := false
	if tree.IsObject() || tree.IsArray() {
		tree.ForEach(func(_, x gjson.Result) bool {
			found = contains(x, v)
			return !found
		})
	}
	return found
}

// prior: with from: prior.*, the value that path names; otherwise the id
// of any entity in the task's prior context.
func (m *matcher) prior(a *contract.Arg, v gjson.Result) (string, bool) {
	if a.From != nil && a.From.Kind == contract.ExprPrior {
		pv, ok := a.From.Eval(m.scope())
		return pv.Ref, ok && envelope.Same(v, pv.Result)
	}
	var ref string
	envelope.Get(m.req, envelope.StatePath(abi.CapStateEntities, "entities")).ForEach(func(_, e gjson.Result) bool {
		if envelope.Same(v, e.Get("id")) {
			ref = e.Get("type").String() + ":" + e.Get("id").String()
		}
		return ref == ""
	})
	return ref, ref != ""
}

// Normalise is the default USER-source normalisation: it folds full-width
// ASCII forms and the ideographic space to ASCII (the part of NFKC that
// matters for typed text), lowercases, and drops white space.
func Normalise(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf { // ASCII without the unicode tables' calls
			switch {
			case r == ' ' || r >= '\t' && r <= '\r':
			case r >= 'A' && r <= 'Z':
				b.WriteByte(byte(r) + 'a' - 'A')
			default:
				b.WriteByte(byte(r))
			}
			continue
		}
		switch {
		case r == 0x3000:
			continue
		case r >= 0xFF01 && r <= 0xFF5E:
			r -= 0xFEE0
		}
		if unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
