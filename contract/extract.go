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
	return t.extract(args, resp, true)
}

func (t *Tool) extract(args, resp []byte, entities bool) Extraction {
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
		if ex.Entity != nil && entities {
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
		n := 0
		r.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		return n
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
	var out []Entity
	// raw holds the attribute values of every entity, each a slice of it
	// capped at its own end, so that one allocation serves them all.
	var raw []byte
	e.each(r, base, func(f *EntityFields) {
		ent := Entity{Type: f.Type, ID: f.ID.String(), Attrs: make(map[string]json.RawMessage, len(f.Attrs))}
		if f.ID.Type != gjson.String {
			ent.IDJSON = json.RawMessage(f.ID.Raw)
		}
		if f.Name.Exists() {
			ent.Name = f.Name.String()
		}
		for _, a := range f.Attrs {
			if cap(raw)-len(raw) < len(a.Value.Raw) {
				raw = make([]byte, 0, max(len(a.Value.Raw), 2*cap(raw), 256))
			}
			start := len(raw)
			raw = append(raw, a.Value.Raw...)
			ent.Attrs[a.Key] = json.RawMessage(raw[start:len(raw):len(raw)])
		}
		out = append(out, ent)
	})
	return out
}

// EntityFields is one entity as EachEntity gives it, before it becomes an
// Entity: its id (a string, number or boolean), its name (zero when it has
// none) and its attributes (the simple-valued fields other than id and
// name, in the order they first appear).
type EntityFields struct {
	Type  string
	ID    gjson.Result
	Name  gjson.Result
	Attrs []EntityAttr
}

// EntityAttr is one attribute of EntityFields.
type EntityAttr struct {
	Key   string
	Value gjson.Result
}

// ExtractValues is Extract without the entities (every
// ExtractResult.Entities nil): EachEntity gives them to a caller that
// encodes them itself, without an Entity and its map per entity.
func (t *Tool) ExtractValues(args, resp []byte) Extraction {
	return t.extract(args, resp, false)
}

// ExtractFound is ExtractValues for a caller that looks each extract's
// value up itself (a guest asking its host, which scans the response
// natively, instead of scanning it inside the guest): found(i) is the
// value GetDot finds at t.Extracts[i].Path of resp and, when it is an
// array, its number of items.
func (t *Tool) ExtractFound(resp []byte, found func(i int) (gjson.Result, int)) Extraction {
	if t == nil || len(t.Extracts) == 0 {
		return Extraction{Empty: emptyShape(resp)}
	}
	x := Extraction{Empty: true}
	for i, ex := range t.Extracts {
		r, items := found(i)
		it := ExtractResult{Key: ex.Key, Path: ex.Path, Value: r}
		if r.IsArray() {
			it.Count = items
		} else {
			it.Count = count(r, ex.Fields)
		}
		if it.Count > 0 {
			x.Empty = false
		}
		x.Items = append(x.Items, it)
	}
	return x
}

// EachEntity calls fn with every entity Extract would list for x (the
// extraction of the same arguments and response by this tool), in the same
// order and with the same fields. f and its Attrs are reused between calls.
func (t *Tool) EachEntity(args []byte, x Extraction, fn func(f *EntityFields)) {
	if t == nil {
		return
	}
	var base gjson.Result
	if t.IsWrite() {
		base = gjson.ParseBytes(args)
	}
	for i, ex := range t.Extracts {
		if ex.Entity != nil && i < len(x.Items) {
			ex.Entity.each(x.Items[i].Value, base, fn)
		}
	}
}

// each is the entity rule (§8): the entities of r, a WRITE tool's arguments
// base merged under each (the value wins), given to fn one by one.
func (e *EntitySpec) each(r gjson.Result, base gjson.Result, fn func(f *EntityFields)) {
	if e == nil || !r.Exists() {
		return
	}
	var f entityFields
	put := func(k, v gjson.Result) bool {
		f.set(k.Str, v)
		return true
	}
	ef := EntityFields{Type: e.Type}
	each := func(it gjson.Result) {
		f.reset()
		if base.IsObject() {
			base.ForEach(put)
		}
		switch {
		case it.IsObject():
			it.ForEach(put)
		case it.IsArray() || it.Type == gjson.Null:
			return
		case e.Scalar != "":
			f.set(e.Scalar, it)
		default:
			return
		}
		id := f.get(e.ID)
		if !hasValue(id) || id.IsObject() || id.IsArray() {
			return
		}
		ef.ID, ef.Name, ef.Attrs = id, gjson.Result{}, ef.Attrs[:0]
		if n := f.get(e.Name); hasValue(n) && !n.IsObject() && !n.IsArray() {
			ef.Name = n
		}
		for _, kv := range f.kv {
			k, v := kv.k, kv.v
			if k == e.ID || k == e.Name || v.IsObject() || v.IsArray() || !v.Exists() {
				continue
			}
			ef.Attrs = append(ef.Attrs, EntityAttr{k, v})
		}
		fn(&ef)
	}
	if r.IsArray() {
		r.ForEach(func(_, it gjson.Result) bool { each(it); return true })
	} else {
		each(r)
	}
}

// entityFields are the fields of one entity in the order they first
// appear, a later value of a key replacing the earlier: a slice searched
// in order, indexed by a map only once an object has many keys.
type entityFields struct {
	kv    []entityField
	index map[string]int
}

type entityField struct {
	k string
	v gjson.Result
}

// linearFields is how many fields are searched in order before the index
// takes over.
const linearFields = 32

func (f *entityFields) reset() {
	f.kv = f.kv[:0]
	f.index = nil
}

func (f *entityFields) find(k string) int {
	if f.index != nil {
		if i, ok := f.index[k]; ok {
			return i
		}
		return -1
	}
	for i := range f.kv {
		if f.kv[i].k == k {
			return i
		}
	}
	return -1
}

func (f *entityFields) set(k string, v gjson.Result) {
	if i := f.find(k); i >= 0 {
		f.kv[i].v = v
		return
	}
	f.kv = append(f.kv, entityField{k, v})
	switch {
	case f.index != nil:
		f.index[k] = len(f.kv) - 1
	case len(f.kv) > linearFields:
		f.index = make(map[string]int, 2*len(f.kv))
		for i, kv := range f.kv {
			f.index[kv.k] = i
		}
	}
}

func (f *entityFields) get(k string) gjson.Result {
	if i := f.find(k); i >= 0 {
		return f.kv[i].v
	}
	return gjson.Result{}
}
