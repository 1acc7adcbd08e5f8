package services

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

func init() {
	Register("contract.provenance", ctProvenance)
}

// ctProvenance does the matching of CONTRACT_SPEC §5.3 for ParamContract:
// for every parameter the request's tool contract lists (in path order) it
// finds whether the arguments (bound, else the model's) hold a value, which
// source the value has — the binding's from the request's provenance map
// when the parameter has from or const, else the first of its sources that
// matches (step 3) — and whether it is one of the enum values. The guest
// makes the decisions (steps 2, 4, 5 and the priority), so the answer also
// carries the attributes it decides with. in is ignored.
//
// The answer is empty without a contract or parameters; otherwise one
// record per parameter, records separated by '\x1e', fields by '\x1f':
//
//	0 path           the contract's parameter path (lines[].goodsCode)
//	1 name           the label, else the path
//	2 present        "1" when every slot has a value (not absent, null or "")
//	3 source         the source type when present, else ""
//	4 ref            what matched: evidence id, entity type:id, or the binding's detail
//	5 enumOK         "0" when an enum is configured and a value is not in it
//	6 required       "1" or "0"
//	7 action         missing.action
//	8 tool           missing.tool
//	9 message        missing.message
//	10 modelAllowed  "1" when sources contain MODEL
//	11 userAllowed   "1" when sources contain USER
//	12 bound         "1" when the parameter has from or const
//	13 enum          the enum as a JSON array, when enumOK is "0"
//
// An array parameter (lines[].goodsCode) has one slot per item; its source
// is MODEL when any item's value is, else the first item's.
func ctProvenance(req, _ []byte) ([]byte, error) {
	t, err := ctTool(req)
	if err != nil || t == nil || len(t.Args) == 0 {
		return nil, err
	}
	doc := []byte(ctArgs(req).Raw)
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}")
	}
	m := newCtMatcher(req)
	var out []byte
	for i, key := range t.ArgPaths() {
		a := t.Args[key]
		if i > 0 {
			out = append(out, 0x1e)
		}
		slots := a.Path.Expand(doc)
		present := len(slots) > 0
		for _, s := range slots {
			if !ctHasValue(s.Value) {
				present = false
			}
		}
		bound := a.Const != nil || a.From != nil
		var source, ref string
		enumOK := true
		if present {
			for j, s := range slots {
				var src, r string
				if bound {
					src, r = m.boundSource(s.Path)
				} else {
					src, r = m.match(a, key, s.Path, s.Value)
				}
				if j == 0 || src == string(contract.SourceModel) {
					source, ref = src, r
				}
				if src == string(contract.SourceModel) {
					break
				}
			}
			if len(a.Enum) > 0 {
				for _, s := range slots {
					if !ctInEnum(s.Value, a.Enum) {
						enumOK = false
					}
				}
			}
		}
		name := a.Label
		if name == "" {
			name = key
		}
		out = ctAppendFields(out, key, name, ctFlag(present), source, ref, ctFlag(enumOK), ctFlag(a.Required),
			string(a.Missing.Action), a.Missing.Tool, a.Missing.Message,
			ctFlag(slices.Contains(a.Sources, contract.SourceModel)), ctFlag(slices.Contains(a.Sources, contract.SourceUser)),
			ctFlag(bound), ctEnumText(a.Enum, enumOK))
	}
	return out, nil
}

func ctAppendFields(out []byte, fields ...string) []byte {
	for i, f := range fields {
		if i > 0 {
			out = append(out, 0x1f)
		}
		out = append(out, f...)
	}
	return out
}

func ctFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func ctEnumText(enum []json.RawMessage, ok bool) string {
	if ok {
		return ""
	}
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = string(Canonical(gjson.ParseBytes(e)))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func ctInEnum(v gjson.Result, enum []json.RawMessage) bool {
	for _, e := range enum {
		if ctSame(v, gjson.ParseBytes(e)) {
			return true
		}
	}
	return false
}

// ctSame is the value equality of §5.3: scalars by their text (so 200
// equals "200", as success EQ compares), containers by canonical JSON.
func ctSame(a, b gjson.Result) bool {
	if !a.Exists() || !b.Exists() {
		return false
	}
	ac, bc := a.IsObject() || a.IsArray(), b.IsObject() || b.IsArray()
	if ac || bc {
		return ac && bc && bytes.Equal(Canonical(a), Canonical(b))
	}
	return a.Type != gjson.Null && b.Type != gjson.Null && a.String() == b.String()
}

// ctMatcher answers the source questions of one request; it reads each
// state view once.
type ctMatcher struct {
	req      []byte
	scope    *ctScope
	prov     gjson.Result
	expected []string // the current follow-up's expectedFields
	messages []string // recent user messages, normalised
	msgsDone bool
	evItems  []gjson.Result // successful evidence items, in view order
	evDone   bool
}

func newCtMatcher(req []byte) *ctMatcher {
	m := &ctMatcher{req: req, scope: newCtScope(req), prov: gjson.GetBytes(req, abi.FieldProvenance)}
	for _, f := range gjson.GetBytes(req, ctStatePath(abi.CapStateFollowUp, "current.expectedFields")).Array() {
		m.expected = append(m.expected, f.String())
	}
	return m
}

// boundSource is the source ArgBinding recorded for a concrete path, or
// MODEL when the binding found no value (§5.3 step 3, first two rows).
func (m *ctMatcher) boundSource(path string) (string, string) {
	if s := m.prov.Get(ctEscape(path)).String(); s != "" {
		return s, ""
	}
	return string(contract.SourceModel), ""
}

// match is step 3 for a parameter without from or const: the first of its
// sources that matches, else MODEL.
func (m *ctMatcher) match(a *contract.Arg, key, path string, v gjson.Result) (string, string) {
	for _, s := range a.Sources {
		var ok bool
		var ref string
		switch s {
		case contract.SourceUser:
			ok = m.user(key, path, v)
		case contract.SourceEvidence:
			ref, ok = m.evidence(v)
		case contract.SourceNodeOutput:
			ok = ctSame(v, ctDotGet(m.scope.Inputs(), path)) || ctSame(v, ctDotGet(m.scope.Outputs(), path))
		case contract.SourceShared:
			ok = ctSame(v, ctDotGet(m.scope.Shared(), path))
		case contract.SourceSession:
			ok = ctSame(v, ctDotGet(m.scope.Session(), path))
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
func (m *ctMatcher) user(key, path string, v gjson.Result) bool {
	if slices.Contains(m.expected, key) || slices.Contains(m.expected, path) {
		return true
	}
	if v.IsObject() || v.IsArray() {
		return false
	}
	needle := ctNormalise(v.String())
	if utf8.RuneCountInString(needle) < 2 {
		return false
	}
	if !m.msgsDone {
		m.msgsDone = true
		for _, s := range gjson.GetBytes(m.req, ctStatePath(abi.CapStateConversation, "userMessages")).Array() {
			m.messages = append(m.messages, ctNormalise(s.String()))
		}
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
func (m *ctMatcher) evidence(v gjson.Result) (string, bool) {
	if !m.evDone {
		m.evDone = true
		ctEachEvidence(m.req, func(item gjson.Result) { m.evItems = append(m.evItems, item) })
	}
	var ref string
	for _, item := range m.evItems {
		found := false
		if !v.IsObject() && !v.IsArray() {
			item.Get("values").ForEach(func(_, x gjson.Result) bool {
				found = x.String() == v.String()
				return !found
			})
		}
		if !found {
			item.Get("extracts").ForEach(func(_, x gjson.Result) bool {
				found = ctContains(x, v)
				return !found
			})
		}
		if found {
			ref = item.Get("id").String()
			break
		}
	}
	return ref, ref != ""
}

// ctContains reports whether tree or any value inside it equals v.
func ctContains(tree, v gjson.Result) bool {
	if ctSame(tree, v) {
		return true
	}
	found := false
	if tree.IsObject() || tree.IsArray() {
		tree.ForEach(func(_, x gjson.Result) bool {
			found = ctContains(x, v)
			return !found
		})
	}
	return found
}

// prior: with from: prior.*, the value that path names; otherwise the id
// of any entity in the task's prior context.
func (m *ctMatcher) prior(a *contract.Arg, v gjson.Result) (string, bool) {
	if a.From != nil && a.From.Kind == contract.ExprPrior {
		pv, ok := a.From.Eval(m.scope)
		return pv.Ref, ok && ctSame(v, pv.Result)
	}
	var ref string
	gjson.GetBytes(m.req, ctStatePath(abi.CapStateEntities, "entities")).ForEach(func(_, e gjson.Result) bool {
		if ctSame(v, e.Get("id")) {
			ref = e.Get("type").String() + ":" + e.Get("id").String()
		}
		return ref == ""
	})
	return ref, ref != ""
}

// ctNormalise folds full-width ASCII forms and the ideographic space to
// ASCII (the part of NFKC that matters for typed text), lowercases, and
// drops white space.
func ctNormalise(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
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
