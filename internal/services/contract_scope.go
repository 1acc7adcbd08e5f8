package services

import (
	"encoding/json"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// This file holds what the contract.* services share: the tool contract of
// the request, parsed once per distinct text, and a contract.Scope that
// reads the request's state views.

// ctTool returns the parsed contract of the request's tool (the
// envelope's contract, i.e. tools.<name> of the skill), or nil when the
// request carries none. Parsing is shared with the response services
// (requestToolContract), cached by the contract's text.
func ctTool(req []byte) (*contract.Tool, error) {
	raw := gjson.GetBytes(req, abi.FieldContract)
	if !raw.Exists() || raw.Type == gjson.Null {
		return nil, nil
	}
	return requestToolContract(req)
}

// ctStatePath is the envelope path of a state view, with an optional sub-path.
func ctStatePath(view abi.Capability, sub string) string {
	p := abi.FieldState + "." + strings.ReplaceAll(string(view), ".", `\.`)
	if sub != "" {
		p += "." + sub
	}
	return p
}

// ctArgs returns the arguments the request's guard works on: the
// bound arguments when an earlier guard rewrote them, else the model's.
func ctArgs(req []byte) gjson.Result {
	if b := gjson.GetBytes(req, abi.FieldBound); b.Exists() {
		return b
	}
	return gjson.GetBytes(req, abi.FieldArgs)
}

// ctScope is a contract.Scope over the request's state views:
// state.node (inputs, outputs, shared, session, platform), state.entities
// (prior) and state.evidence (evidence.*, already in lookup order: this
// node first, then upstream near to far, newer first within a node).
type ctScope struct {
	req     []byte
	node    gjson.Result
	outputs *gjson.Result
}

func newCtScope(req []byte) *ctScope {
	return &ctScope{req: req, node: gjson.GetBytes(req, ctStatePath(abi.CapStateNode, ""))}
}

func (s *ctScope) Inputs() gjson.Result { return s.node.Get("inputs") }

// Outputs flattens state.node.outputs ({key: {value, sourceType, …}}) to
// {key: value}, the shape outputs.<path> expressions read.
func (s *ctScope) Outputs() gjson.Result {
	if s.outputs != nil {
		return *s.outputs
	}
	b := []byte{'{'}
	n := 0
	s.node.Get("outputs").ForEach(func(k, v gjson.Result) bool {
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
func (s *ctScope) Upstream() gjson.Result { return gjson.Result{} }

func (s *ctScope) Shared() gjson.Result  { return s.node.Get("shared") }
func (s *ctScope) Session() gjson.Result { return s.node.Get("session") }

func (s *ctScope) Prior(entityType, id string) (contract.Entity, bool) {
	var out contract.Entity
	found := false
	gjson.GetBytes(s.req, ctStatePath(abi.CapStateEntities, "entities")).ForEach(func(_, e gjson.Result) bool {
		if e.Get("type").String() != entityType || (id != "" && e.Get("id").String() != id) {
			return true
		}
		out = contract.Entity{Type: entityType, ID: e.Get("id").String(), Name: e.Get("name").String()}
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

func (s *ctScope) Platform(field string) (gjson.Result, bool) {
	r := s.node.Get("platform." + ctEscape(field))
	return r, r.Exists() && r.Type != gjson.Null
}

// Evidence returns the extracts named key of the successful evidence: status
// SUCCESS and business success (empty results included), CONTRACT_SPEC §9.
func (s *ctScope) Evidence(key string) []contract.EvidenceValue {
	var out []contract.EvidenceValue
	ctEachEvidence(s.req, func(item gjson.Result) {
		if v := item.Get("extracts." + ctEscape(key)); v.Exists() {
			out = append(out, contract.EvidenceValue{EvidenceID: item.Get("id").String(), Value: v})
		}
	})
	return out
}

// ctEachEvidence calls fn for every evidence item of the request's
// state.evidence that ran and succeeded in business terms, in view order.
func ctEachEvidence(req []byte, fn func(item gjson.Result)) {
	gjson.GetBytes(req, ctStatePath(abi.CapStateEvidence, "items")).ForEach(func(_, item gjson.Result) bool {
		if item.Get("status").String() == abi.OutcomeSuccess.String() && item.Get("businessOk").Bool() {
			fn(item)
		}
		return true
	})
}

// ctEscape quotes gjson's path syntax in one path segment.
func ctEscape(s string) string {
	if !strings.ContainsAny(s, `.*?|#@\!=<>%(),:{}[]"~'`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`.*?|#@\!=<>%(),:{}[]"~'`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ctDotGet reads a concrete dot path (lines.0.goodsCode) inside r.
func ctDotGet(r gjson.Result, dot string) gjson.Result {
	parts := strings.Split(dot, ".")
	for i, p := range parts {
		parts[i] = ctEscape(p)
	}
	return r.Get(strings.Join(parts, "."))
}

// ctHasValue is the spec's "has a value": present, not null, not "".
func ctHasValue(r gjson.Result) bool {
	if !r.Exists() || r.Type == gjson.Null {
		return false
	}
	return r.Type != gjson.String || r.Str != ""
}
