package contract

import (
	"encoding/json"
	"math"
	"sync"

	"github.com/agentwarden/warden/internal/jsonitems"
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
// extracts. The extraction's values are read in resp's own bytes, not
// copied: resp must not change while the extraction is in use.
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
		r := getDotView(resp, ex.Path)
		it := ExtractResult{Key: ex.Key, Path: ex.Path, Value: r, Count: count(r, ex.Fields)}
		if ex.Entity != nil && entities {
			it.Entities = ex.Entity.entities(r, base, it.Count)
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
	return e.entities(gjson.ParseBytes(value), gjson.Result{}, 0)
}

// entities builds the entities of r; n is how many items r holds when the
// caller counted them (0 when not), the room made for them at once.
func (e *EntitySpec) entities(r gjson.Result, base gjson.Result, n int) []Entity {
	var out []Entity
	if n > 0 && r.IsArray() {
		out = make([]Entity, 0, n)
	}
	// raw holds the attribute values of every entity, each a slice of it
	// capped at its own end, so that one allocation serves them all.
	var raw []byte
	e.each(r, base, func(f *EntityFields) {
		ent := Entity{Type: f.Type, ID: f.ID, Name: f.Name, Attrs: make(map[string]json.RawMessage, len(f.Attrs))}
		if f.IDJSON != "" {
			ent.IDJSON = json.RawMessage(f.IDJSON)
		}
		for _, a := range f.Attrs {
			if cap(raw)-len(raw) < len(a.Raw) {
				raw = make([]byte, 0, max(len(a.Raw), 2*cap(raw), 256))
			}
			start := len(raw)
			raw = append(raw, a.Raw...)
			ent.Attrs[a.Key] = json.RawMessage(raw[start:len(raw):len(raw)])
		}
		out = append(out, ent)
	})
	return out
}

// EntityFields is one entity as EachEntity gives it, before it becomes an
// Entity: its id's text and, when the id is not a string (a number or a
// boolean), its JSON; its name ("" when it has none); its attributes (the
// simple-valued fields other than id and name, in the order they first
// appear, each with its raw JSON).
type EntityFields struct {
	Type   string
	ID     string
	IDJSON string
	Name   string
	Attrs  []EntityAttr
}

// EntityAttr is one attribute of EntityFields.
type EntityAttr struct {
	Key string
	Raw string
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
	t.EachEntityOf(args, x, nil, fn)
}

// ItemList is an extract's value item by item as a host lists it (an
// array's items, or the value itself when it is not an array; abi/guest's
// Items answers one): each item's kind ('n' null, 'f', 't', '#' number, 's'
// string, '[' array, '{' object), raw JSON and text (a string unescaped,
// another scalar as gjson's String gives it), and an object's members.
type ItemList interface {
	Len() int
	Item(i int) (kind byte, raw, text string)
	EachMember(i int, fn func(key string, kind byte, raw, text string))
}

// EachEntityOf is EachEntity for a caller whose host lists the items of
// extract i's value (list(i), ok false to read the value from x instead),
// so that the records are not parsed again to find their fields. The rule
// is the same; only where the fields come from differs.
func (t *Tool) EachEntityOf(args []byte, x Extraction, list func(i int) (ItemList, bool), fn func(f *EntityFields)) {
	if t == nil {
		return
	}
	var base gjson.Result
	if t.IsWrite() {
		base = gjson.ParseBytes(args)
	}
	for i, ex := range t.Extracts {
		if ex.Entity == nil || i >= len(x.Items) {
			continue
		}
		if list != nil {
			if l, ok := list(i); ok {
				ex.Entity.eachListed(l, base, fn)
				continue
			}
		}
		ex.Entity.each(x.Items[i].Value, base, fn)
	}
}

// each is the entity rule (§8) over a gjson value: the entities of r, a
// WRITE tool's arguments base merged under each (the value wins), given to
// fn one by one.
func (e *EntitySpec) each(r gjson.Result, base gjson.Result, fn func(f *EntityFields)) {
	if e == nil || !r.Exists() {
		return
	}
	if r.Type == gjson.JSON {
		// the records read in one pass; gjson's ForEach, which scans each
		// twice, only for what that pass gives way on
		l := itemLists.Get().(*jsonitems.List)
		defer func() {
			l.Reset()
			itemLists.Put(l)
		}()
		if l.Scan(r.Raw, math.MaxInt) {
			e.eachListed(l, base, fn)
			return
		}
	}
	e.eachGjson(r, base, fn)
}

// itemLists keep their buffers between calls of each.
var itemLists = sync.Pool{New: func() any { return new(jsonitems.List) }}

// eachGjson is each through gjson's ForEach.
func (e *EntitySpec) eachGjson(r gjson.Result, base gjson.Result, fn func(f *EntityFields)) {
	b := e.builder(base, fn)
	item := func(it gjson.Result) {
		b.start()
		switch {
		case it.IsObject():
			it.ForEach(b.put)
		case it.IsArray() || it.Type == gjson.Null:
			return
		case e.Scalar != "":
			b.f.set(e.Scalar, gjsonValue(it))
		default:
			return
		}
		b.finish()
	}
	if r.IsArray() {
		r.ForEach(func(_, it gjson.Result) bool { item(it); return true })
	} else {
		item(r)
	}
}

// eachListed is each over a host's list of the value's items.
func (e *EntitySpec) eachListed(l ItemList, base gjson.Result, fn func(f *EntityFields)) {
	if e == nil {
		return
	}
	b := e.builder(base, fn)
	for i := range l.Len() {
		kind, raw, text := l.Item(i)
		b.start()
		switch {
		case kind == '{':
			l.EachMember(i, b.putListed)
		case kind == '[' || kind == 'n' || kind == 0:
			continue
		case e.Scalar != "":
			b.f.set(e.Scalar, fieldValue{kind: kind, raw: raw, text: text})
		default:
			continue
		}
		b.finish()
	}
}

// entityBuilder applies the rule to one item's fields at a time.
type entityBuilder struct {
	e         *EntitySpec
	base      []entityField // the WRITE tool's arguments
	f         entityFields
	ef        EntityFields
	fn        func(*EntityFields)
	put       func(k, v gjson.Result) bool
	putListed func(key string, kind byte, raw, text string)
}

func (e *EntitySpec) builder(base gjson.Result, fn func(*EntityFields)) *entityBuilder {
	b := &entityBuilder{e: e, fn: fn, ef: EntityFields{Type: e.Type}}
	b.put = func(k, v gjson.Result) bool {
		b.f.set(k.Str, gjsonValue(v))
		return true
	}
	b.putListed = func(key string, kind byte, raw, text string) {
		b.f.set(key, fieldValue{kind: kind, raw: raw, text: text})
	}
	if base.IsObject() {
		// the arguments' members, read once for every item
		l := itemLists.Get().(*jsonitems.List)
		if l.Scan(base.Raw, 1) {
			for _, m := range l.Members(0) {
				b.base = append(b.base, entityField{m.Key, fieldValue{kind: m.Kind, raw: m.Raw, text: m.Text}})
			}
		} else {
			base.ForEach(func(k, v gjson.Result) bool {
				b.base = append(b.base, entityField{k.Str, gjsonValue(v)})
				return true
			})
		}
		l.Reset()
		itemLists.Put(l)
	}
	return b
}

// start begins an item: the WRITE tool's arguments first.
func (b *entityBuilder) start() {
	b.f.reset()
	for _, kv := range b.base {
		b.f.set(kv.k, kv.v)
	}
}

// finish makes the item's fields an entity when its id has a simple value.
func (b *entityBuilder) finish() {
	e, ef := b.e, &b.ef
	id := b.f.get(e.ID)
	if !id.has() || !id.simple() {
		return
	}
	ef.ID, ef.IDJSON, ef.Name, ef.Attrs = id.String(), "", "", ef.Attrs[:0]
	if id.kind != 's' {
		ef.IDJSON = id.raw
	}
	if n := b.f.get(e.Name); n.has() && n.simple() {
		ef.Name = n.String()
	}
	for _, kv := range b.f.kv {
		k, v := kv.k, kv.v
		if k == e.ID || k == e.Name || v.kind == 0 || !v.simple() {
			continue
		}
		ef.Attrs = append(ef.Attrs, EntityAttr{k, v.raw})
	}
	b.fn(ef)
}

// fieldValue is what the entity rule reads of a field's value: its kind
// (as ItemList's, 0 for none), raw JSON and text (gjson's String), from
// gjson or from a host's list. It holds no gjson.Result: the rule copies
// values around, and a small value is what keeps that cheap inside a guest.
type fieldValue struct {
	kind byte
	raw  string
	text string
}

func gjsonValue(r gjson.Result) fieldValue {
	v := fieldValue{raw: r.Raw}
	switch {
	case !r.Exists():
	case r.IsObject():
		v.kind = '{'
	case r.IsArray():
		v.kind = '['
	case r.Type == gjson.Null:
		v.kind = 'n'
	case r.Type == gjson.False:
		v.kind, v.text = 'f', "false"
	case r.Type == gjson.True:
		v.kind, v.text = 't', "true"
	case r.Type == gjson.Number:
		v.kind, v.text = '#', r.String()
	default:
		v.kind, v.text = 's', r.Str
	}
	return v
}

// String is the value's text (gjson's String).
func (v fieldValue) String() string { return v.text }

// has is hasValue: present, not null and not the empty string.
func (v fieldValue) has() bool {
	return v.kind != 0 && v.kind != 'n' && !(v.kind == 's' && v.String() == "")
}

// simple is a value that is neither an object nor an array.
func (v fieldValue) simple() bool { return v.kind != '{' && v.kind != '[' }

// entityFields are the fields of one entity in the order they first
// appear, a later value of a key replacing the earlier: a slice searched
// in order, indexed by a map only once an object has many keys.
type entityFields struct {
	kv    []entityField
	index map[string]int
}

type entityField struct {
	k string
	v fieldValue
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

func (f *entityFields) set(k string, v fieldValue) {
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

func (f *entityFields) get(k string) fieldValue {
	if i := f.find(k); i >= 0 {
		return f.kv[i].v
	}
	return fieldValue{}
}
