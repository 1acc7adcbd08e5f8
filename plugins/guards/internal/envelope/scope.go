package envelope

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Scope is a contract.Scope over the request's state views: state.node
// (inputs, outputs, shared, session, platform), state.entities (prior) and
// state.evidence (evidence.*, already in lookup order: this node first, then
// upstream near to far, newer first within a node).
type Scope struct {
	req      Reader
	nodeView gjson.Result
	nodeRead bool
	outputs  *gjson.Result
}

// NewScope returns the scope of the request; it reads the node view once,
// when first asked.
func NewScope(req Reader) *Scope { return &Scope{req: req} }

func (s *Scope) node() gjson.Result {
	if !s.nodeRead {
		s.nodeRead = true
		s.nodeView = Get(s.req, StatePath(abi.CapStateNode, ""))
	}
	return s.nodeView
}

// Inputs are the node's inputs.
func (s *Scope) Inputs() gjson.Result { return s.node().Get("inputs") }

// Outputs flattens state.node.outputs ({key: {value, sourceType, …}}) to
// {key: value}, the shape outputs.<path> expressions read.
func (s *Scope) Outputs() gjson.Result {
	if s.outputs != nil {
		return *s.outputs
	}
	b := []byte{'{'}
	n := 0
	s.node().Get("outputs").ForEach(func(k, v gjson.Result) bool {
		val := v.Get("value")
		if !val.Exists() {
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, k.Raw...)
		b = append(b, ':')
		b = append(b, val.Raw...)
		n++
		return true
	})
	b = append(b, '}')
	r := gjson.ParseBytes(b)
	s.outputs = &r
	return r
}

// Upstream is not part of any state view a guard gets: only inputs.*.from
// reads it, and inputs are bound by the loop before the node starts.
func (s *Scope) Upstream() gjson.Result { return gjson.Result{} }

// Shared is the task's shared scratch.
func (s *Scope) Shared() gjson.Result { return s.node().Get("shared") }

// Session is the session's values.
func (s *Scope) Session() gjson.Result { return s.node().Get("session") }

// Prior finds an entity of the task's prior context by type and, when id is
// set, id.
func (s *Scope) Prior(entityType, id string) (contract.Entity, bool) {
	var out contract.Entity
	found := false
	Get(s.req, StatePath(abi.CapStateEntities, "entities")).ForEach(func(_, e gjson.Result) bool {
		if e.Get("type").String() != entityType || (id != "" && e.Get("id").String() != id) {
			return true
		}
		out = contract.Entity{Type: entityType, ID: e.Get("id").String(), Name: e.Get("name").String()}
		if raw := e.Get("idJson"); raw.Exists() {
			out.IDJSON = json.RawMessage(raw.Raw)
		}
		if attrs := e.Get("attrs"); attrs.IsObject() {
			out.Attrs = map[string]json.RawMessage{}
			attrs.ForEach(func(k, v gjson.Result) bool {
				out.Attrs[k.Str] = json.RawMessage(v.Raw)
				return true
			})
		}
		found = true
		return false
	})
	return out, found
}

// Platform reads a platform field of the node view.
func (s *Scope) Platform(field string) (gjson.Result, bool) {
	r := s.node().Get("platform." + Escape(field))
	return r, r.Exists() && r.Type != gjson.Null
}

// Evidence returns the extracts named key of the successful evidence: status
// SUCCESS and business success (empty results included), CONTRACT_SPEC §9.
func (s *Scope) Evidence(key string) []contract.EvidenceValue {
	var out []contract.EvidenceValue
	EachEvidence(s.req, func(item gjson.Result) {
		if v := item.Get("extracts." + Escape(key)); v.Exists() {
			out = append(out, contract.EvidenceValue{EvidenceID: item.Get("id").String(), Value: v})
		}
	})
	return out
}

// EachEvidence calls fn for every evidence item of the request's
// state.evidence that ran and succeeded in business terms, in view order.
func EachEvidence(req Reader, fn func(item gjson.Result)) {
	Get(req, StatePath(abi.CapStateEvidence, "items")).ForEach(func(_, item gjson.Result) bool {
		if item.Get("status").String() == abi.OutcomeSuccess.String() && item.Get("businessOk").Bool() {
			fn(item)
		}
		return true
	})
}

const pathSyntax = `.*?|#@\!=<>%(),:{}[]"~'`

// Escape quotes gjson's path syntax in one path segment.
func Escape(s string) string {
	if !strings.ContainsAny(s, pathSyntax) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(pathSyntax, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DotGet reads a concrete dot path (lines.0.goodsCode) inside r.
func DotGet(r gjson.Result, dot string) gjson.Result {
	parts := strings.Split(dot, ".")
	for i, p := range parts {
		parts[i] = Escape(p)
	}
	return r.Get(strings.Join(parts, "."))
}

// HasValue is the spec's "has a value": present, not null, not "".
func HasValue(r gjson.Result) bool {
	if !r.Exists() || r.Type == gjson.Null {
		return false
	}
	return r.Type != gjson.String || r.Str != ""
}

// Same is the value equality of §5.3: scalars by their text (so 200 equals
// "200", as success EQ compares), containers by canonical JSON.
func Same(a, b gjson.Result) bool {
	if !a.Exists() || !b.Exists() {
		return false
	}
	ac, bc := a.IsObject() || a.IsArray(), b.IsObject() || b.IsArray()
	if ac || bc {
		return ac && bc && bytes.Equal(canonical.JSON(a), canonical.JSON(b))
	}
	return a.Type != gjson.Null && b.Type != gjson.Null && a.String() == b.String()
}
