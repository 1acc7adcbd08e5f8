package contract

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// Scope is the runtime state an expression reads. The loop implements it per
// node; every method returns data the node may see and nothing else.
type Scope interface {
	// Inputs is the node's bound inputs, a JSON object.
	Inputs() gjson.Result
	// Outputs is what the node has written with builtin_output_set, a JSON object.
	Outputs() gjson.Result
	// Upstream is the outputs of completed upstream nodes merged into one
	// object, the nearest node winning; inputs.*.from reads it (§7).
	Upstream() gjson.Result
	// Shared is the task-level shared values, a JSON object.
	Shared() gjson.Result
	// Session is the session-level shared values, a JSON object.
	Session() gjson.Result
	// Prior returns the most recent entity of the type from the task's prior
	// context when id is "", else the entity type:id.
	Prior(entityType, id string) (Entity, bool)
	// Platform returns an open platform field of the login identity (§11).
	Platform(field string) (gjson.Result, bool)
	// Evidence returns the subtrees of the extracts named key in the
	// successful evidence (business success, empty results included) of this
	// node and its upstream nodes, delegated ones included: this node first,
	// then upstream nearest first, newer before older within a node.
	Evidence(key string) []EvidenceValue
}

// EvidenceValue is the subtree of one extract of one piece of evidence.
type EvidenceValue struct {
	EvidenceID string
	Value      gjson.Result
}

// Entity is an entity of the session's entity index (§6.3, §8).
type Entity struct {
	Type string
	ID   string
	// IDJSON is the id's JSON when the value's id was not a string (a
	// number or a boolean): prior.<type>.id reads it with its type.
	IDJSON json.RawMessage
	Name   string
	Attrs  map[string]json.RawMessage // simple-valued fields other than id and name
}

// Ref is the entity's type:id reference.
func (e Entity) Ref() string { return e.Type + ":" + e.ID }

// Value is a value read by an expression and the source it is recorded with.
type Value struct {
	Result gjson.Result
	Source SourceType
	Ref    string // evidence id for EVIDENCE, type:id for PRIOR_TASK, else ""
}

// Raw is the value's JSON text.
func (v Value) Raw() json.RawMessage { return json.RawMessage(v.Result.Raw) }

// Eval reads the expression in an args.*.from position (§9). It reports
// false when nothing is there: absent, null and "" are not values. A "[]" in
// the path collects every item's value into an array. call. expressions
// never evaluate here; use Verify.BuildArgs.
func (e *Expr) Eval(s Scope) (Value, bool) {
	v := Value{Source: e.Source()}
	switch e.Kind {
	case ExprInputs:
		v.Result = e.Path.getResult(s.Inputs())
	case ExprOutputs:
		v.Result = e.Path.getResult(s.Outputs())
	case ExprUpstream:
		v.Result = e.Path.getResult(s.Upstream())
	case ExprShared:
		v.Result = e.Path.getResult(s.Shared())
	case ExprSession:
		v.Result = e.Path.getResult(s.Session())
	case ExprPlatform:
		r, ok := s.Platform(e.Field)
		if !ok {
			return v, false
		}
		v.Result = r
	case ExprPrior:
		ent, ok := s.Prior(e.EntityType, e.EntityID)
		if !ok {
			return v, false
		}
		v.Ref = ent.Ref()
		v.Result = ent.attr(e.Attr)
	case ExprEvidence:
		for _, ev := range s.Evidence(e.Key) {
			r := ev.Value
			if !e.Path.IsZero() {
				r = e.Path.getResult(ev.Value)
			}
			if hasValue(r) {
				v.Result, v.Ref = r, ev.EvidenceID
				return v, true
			}
		}
		return v, false
	default:
		return v, false
	}
	return v, hasValue(v.Result)
}

// EvalInput reads an inputs.*.from expression (§7), where outputs.<key>
// means an upstream node's output rather than this node's.
func (in *Input) Eval(s Scope) (Value, bool) {
	if in.From == nil {
		e := &Expr{Raw: in.Name, Kind: ExprUpstream, Path: ParamPath{raw: in.Name, segs: []pathSeg{{name: in.Name}}}}
		return e.Eval(s)
	}
	if in.From.Kind == ExprOutputs {
		e := *in.From
		e.Kind = ExprUpstream
		return e.Eval(s)
	}
	return in.From.Eval(s)
}

func (p ParamPath) getResult(r gjson.Result) gjson.Result {
	if len(p.segs) == 0 {
		return r
	}
	return r.Get(p.gjsonPath())
}

// attr reads an entity attribute: "" is the display name, "id" the id,
// "displayName" the display name, anything else an attribute.
func (e Entity) attr(name string) gjson.Result {
	switch name {
	case "", "displayName":
		return jsonString(e.Name)
	case "id":
		if len(e.IDJSON) > 0 {
			return gjson.ParseBytes(e.IDJSON)
		}
		return jsonString(e.ID)
	}
	raw, ok := e.Attrs[name]
	if !ok {
		return gjson.Result{}
	}
	return gjson.ParseBytes(raw)
}

func jsonString(s string) gjson.Result {
	return gjson.ParseBytes(abi.AppendJSONString(nil, s, false))
}
