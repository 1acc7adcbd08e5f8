package contract

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// Binding records one value the contract wrote into the arguments.
type Binding struct {
	Param  string          // the contract's parameter path, e.g. lines[].goodsCode
	Path   string          // the concrete path written, e.g. lines.0.goodsCode
	Source SourceType      // CONTRACT for const, else the expression's source (§9)
	Ref    string          // evidence id or entity type:id when known
	Value  json.RawMessage // the value written
}

// Bound is the result of binding: the rewritten arguments and what was bound.
type Bound struct {
	Args     json.RawMessage
	Bindings []Binding
}

// SourceOf returns the binding of a concrete path, if the contract bound it.
func (b Bound) SourceOf(concrete string) (Binding, bool) {
	for _, x := range b.Bindings {
		if x.Path == concrete {
			return x, true
		}
	}
	return Binding{}, false
}

// Bind is step 1 of §5.3 (ArgBinding): for each parameter listed in args, in
// path order, a const always overwrites the model's value (source CONTRACT);
// a from that yields a value overwrites it too (source of the expression),
// subject to when (§5.4). Array templates — parameter path and from both
// containing "[]", from not evidence.* — fill index by index, only where the
// model left the index empty. A non-template "[]" parameter receives the
// value at every item the model sent. A nil tool binds nothing.
//
// args "" or null count as {}; anything else that is not an object fails
// with ErrArgsNotObject.
func (t *Tool) Bind(args []byte, s Scope) (Bound, error) {
	doc := bytes.TrimSpace(args)
	if len(doc) == 0 || string(doc) == "null" {
		doc = []byte("{}")
	}
	if !gjson.ValidBytes(doc) || !gjson.ParseBytes(doc).IsObject() {
		return Bound{Args: args}, fmt.Errorf("contract: bind %s: %w", t.nameOr(), ErrArgsNotObject)
	}
	doc = append([]byte(nil), doc...)
	out := Bound{}
	if t == nil {
		out.Args = doc
		return out, nil
	}
	var err error
	for _, key := range t.ArgPaths() {
		a := t.Args[key]
		switch {
		case a.Const != nil:
			for _, slot := range a.slots(doc) {
				if doc, err = SetRaw(doc, slot, a.Const); err != nil {
					return out, err
				}
				out.Bindings = append(out.Bindings, Binding{Param: key, Path: slot, Source: SourceContract, Value: a.Const})
			}
		case a.From != nil:
			if doc, err = a.bindFrom(doc, s, &out); err != nil {
				return out, err
			}
		}
	}
	out.Args = doc
	return out, nil
}

func (t *Tool) nameOr() string {
	if t == nil {
		return "tool"
	}
	return t.Name
}

// slots lists the concrete paths a non-template value goes to: the path
// itself, or every existing item for a "[]" path.
func (a *Arg) slots(doc []byte) []string {
	if !a.Path.HasArray() {
		return []string{a.Path.String()}
	}
	var out []string
	for _, s := range a.Path.Expand(doc) {
		out = append(out, s.Path)
	}
	return out
}

// IsTemplate reports whether the parameter is an array template (§5.4).
func (a *Arg) IsTemplate() bool {
	return a.From != nil && a.From.Kind != ExprEvidence && a.Path.HasArray() && a.From.Path.HasArray()
}

func (a *Arg) bindFrom(doc []byte, s Scope, out *Bound) ([]byte, error) {
	key := a.Path.String()
	if a.IsTemplate() {
		return a.bindTemplate(doc, s, out)
	}
	v, ok := a.evalWhen(s)
	if !ok {
		return doc, nil
	}
	var err error
	for _, slot := range a.slots(doc) {
		if doc, err = SetRaw(doc, slot, []byte(v.Result.Raw)); err != nil {
			return doc, err
		}
		out.Bindings = append(out.Bindings, Binding{Param: key, Path: slot, Source: v.Source, Ref: v.Ref, Value: v.Raw()})
	}
	return doc, nil
}

// evalWhen evaluates from under the when condition (§5.4).
func (a *Arg) evalWhen(s Scope) (Value, bool) {
	if a.When != WhenUnique {
		return a.From.Eval(s)
	}
	if a.From.Kind == ExprEvidence {
		v, ok := a.From.Eval(s)
		if !ok || !v.Result.IsArray() || len(v.Result.Array()) != 1 {
			return Value{}, false
		}
		return v, true
	}
	head, rest, ok := a.From.Path.arrayPrefix()
	if !ok {
		return a.From.Eval(s)
	}
	arr, ok := a.sourceArray(s, head)
	if !ok || len(arr.Array()) != 1 {
		return Value{}, false
	}
	v := arr.v
	v.Result = rest.getResult(arr.Array()[0])
	return v, hasValue(v.Result)
}

type sourceArray struct {
	v Value
}

func (a sourceArray) Array() []gjson.Result { return a.v.Result.Array() }

// sourceArray reads the array at head (a from path cut before its first "[]").
func (a *Arg) sourceArray(s Scope, head ParamPath) (sourceArray, bool) {
	e := *a.From
	e.Path = head
	v, ok := e.Eval(s)
	if !ok || !v.Result.IsArray() {
		return sourceArray{}, false
	}
	return sourceArray{v: v}, true
}

func (a *Arg) bindTemplate(doc []byte, s Scope, out *Bound) ([]byte, error) {
	head, rest, _ := a.From.Path.arrayPrefix()
	arr, ok := a.sourceArray(s, head)
	if !ok {
		return doc, nil
	}
	items := arr.Array()
	if a.When == WhenUnique && len(items) != 1 {
		return doc, nil
	}
	var err error
	for i, item := range items {
		val := rest.getResult(item)
		if !hasValue(val) {
			continue
		}
		slot, ok := a.templateSlot(i)
		if !ok {
			return doc, nil
		}
		if hasValue(GetDot(doc, slot)) {
			continue // the model gave this index a value
		}
		if doc, err = SetRaw(doc, slot, []byte(val.Raw)); err != nil {
			return doc, err
		}
		out.Bindings = append(out.Bindings, Binding{Param: a.Path.String(), Path: slot, Source: arr.v.Source, Ref: arr.v.Ref, Value: json.RawMessage(val.Raw)})
	}
	return doc, nil
}

// templateSlot maps source index i to the parameter: only the first "[]" of
// the parameter path is indexed; a template with several "[]" in the
// parameter binds nothing.
func (a *Arg) templateSlot(i int) (string, bool) {
	return a.Path.At(i)
}
