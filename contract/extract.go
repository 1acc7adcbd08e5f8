package contract

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// ExtractResult is one extract applied to a response (§6.3).
type ExtractResult struct {
	Key      string       // the extract's key; "" when not configured
	Path     string       // the extract's path
	Value    gjson.Result // the subtree at path; evidence.<key>.<path> reads it
	Count    int          // array length; 0 or 1 for an object or a scalar
	Entities []Entity
}

// Extraction is every extract of one response, and whether it is empty.
type Extraction struct {
	Items []ExtractResult
	// Empty is true when every extract counts 0, or, without extracts, when
	// the response itself is empty: no bytes, null, "", [] or {}.
	Empty bool
}

// Item returns the extract with the given key.
func (x Extraction) Item(key string) (ExtractResult, bool) {
	for _, it := range x.Items {
		if it.Key == key {
			return it, true
		}
	}
	return ExtractResult{}, false
}

// Entities returns the entities of every extract, in extract order.
func (x Extraction) Entities() []Entity {
	var out []Entity
	for _, it := range x.Items {
		out = append(out, it.Entities...)
	}
	return out
}

// Extract applies the tool's extracts to a response. For a WRITE tool the
// entity fields are read from the request arguments overlaid by each
// response object (arguments as the base, the response wins), so a save
// that only echoes the key still yields a named entity. A nil tool has no
// extracts.
func (t *Tool) Extract(args, resp []byte) Extraction {
	if t == nil || len(t.Extracts) == 0 {
		return Extraction{Empty: emptyShape(resp)}
	}
	x := Extraction{Empty: true}
	var base gjson.Result
	if t.IsWrite() {
		base = gjson.ParseBytes(args)
	}
	for _, ex := range t.Extracts {
		r := GetDot(resp, ex.Path)
		it := ExtractResult{Key: ex.Key, Path: ex.Path, Value: r, Count: count(r, ex.Fields)}
		if ex.Entity != nil {
			it.Entities = ex.Entity.entities(r, base)
		}
		if it.Count > 0 {
			x.Empty = false
		}
		x.Items = append(x.Items, it)
	}
	return x
}

func count(r gjson.Result, fields []string) int {
	switch {
	case r.IsArray():
		return len(r.Array())
	case r.IsObject():
		if len(fields) == 0 {
			return b2i(Truthy(r))
		}
		for _, f := range fields {
			if hasValue(getDotResult(r, f)) {
				return 1
			}
		}
		return 0
	}
	return b2i(hasValue(r))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func emptyShape(resp []byte) bool {
	r := gjson.ParseBytes(resp)
	if isEmptyResponse(resp) {
		return true
	}
	switch {
	case r.IsArray(), r.IsObject():
		return !Truthy(r)
	case r.Type == gjson.String:
		return r.Str == ""
	}
	return false
}

// Entities builds the entities of a value under the spec (§8): an object is
// one entity, an array one per item, a scalar one only when scalar names it.
func (e *EntitySpec) Entities(value []byte) []Entity {
	return e.entities(gjson.ParseBytes(value), gjson.Result{})
}

func (e *EntitySpec) entities(r gjson.Result, base gjson.Result) []Entity {
	if e == nil || !r.Exists() {
		return nil
	}
	var items []gjson.Result
	if r.IsArray() {
		items = r.Array()
	} else {
		items = []gjson.Result{r}
	}
	var out []Entity
	for _, it := range items {
		fields := map[string]gjson.Result{}
		var order []string
		put := func(k string, v gjson.Result) {
			if _, ok := fields[k]; !ok {
				order = append(order, k)
			}
			fields[k] = v
		}
		if base.IsObject() {
			base.ForEach(func(k, v gjson.Result) bool { put(k.Str, v); return true })
		}
		switch {
		case it.IsObject():
			it.ForEach(func(k, v gjson.Result) bool { put(k.Str, v); return true })
		case it.IsArray() || it.Type == gjson.Null:
			continue
		case e.Scalar != "":
			put(e.Scalar, it)
		default:
			continue
		}
		id := fields[e.ID]
		if !hasValue(id) || id.IsObject() || id.IsArray() {
			continue
		}
		ent := Entity{Type: e.Type, ID: id.String(), Attrs: map[string]json.RawMessage{}}
		if n := fields[e.Name]; hasValue(n) && !n.IsObject() && !n.IsArray() {
			ent.Name = n.String()
		}
		for _, k := range order {
			v := fields[k]
			if k == e.ID || k == e.Name || v.IsObject() || v.IsArray() || !v.Exists() {
				continue
			}
			ent.Attrs[k] = json.RawMessage(v.Raw)
		}
		out = append(out, ent)
	}
	return out
}
