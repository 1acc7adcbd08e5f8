package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// unsupportedStrict are JSON Schema keywords that strict mode refuses.
var unsupportedStrict = []string{
	"allOf", "oneOf", "not", "if", "then", "else",
	"patternProperties", "dependentRequired", "dependentSchemas",
}

// CheckStrictSchema reports why a tool parameter schema cannot be sent with
// "strict": true, or nil if it can. Strict mode needs an object at the root
// and, for every object schema at any depth (properties, items, anyOf, $defs),
// "additionalProperties": false and every property listed in "required"
// (an optional field is expressed as a nullable type instead). The error
// names the first offending place as a path such as
// "$.properties.lines.items".
func CheckStrictSchema(schema json.RawMessage) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return errors.New("no parameter schema")
	}
	var root any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if err := d.Decode(&root); err != nil {
		return fmt.Errorf("parameter schema is not JSON: %w", err)
	}
	m, ok := root.(map[string]any)
	if !ok || !isObjectSchema(m) {
		return errors.New("$: the root must be an object schema")
	}
	if _, ok := m["anyOf"]; ok {
		return errors.New("$: anyOf is not allowed at the root")
	}
	return checkStrict("$", root)
}

func checkStrict(path string, v any) error {
	s, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be an object", path)
	}
	for _, k := range unsupportedStrict {
		if _, ok := s[k]; ok {
			return fmt.Errorf("%s: %q is not supported in strict mode", path, k)
		}
	}
	if isObjectSchema(s) {
		if ap, ok := s["additionalProperties"]; !ok || ap != false {
			return fmt.Errorf("%s: additionalProperties must be false", path)
		}
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if rs, ok := s["required"].([]any); ok {
			for _, r := range rs {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		for _, name := range sortedKeys(props) {
			if !required[name] {
				return fmt.Errorf("%s: property %q must be required", path, name)
			}
		}
		for _, name := range sortedKeys(props) {
			if err := checkStrict(path+".properties."+name, props[name]); err != nil {
				return err
			}
		}
	}
	switch items := s["items"].(type) {
	case nil:
	case []any:
		for i, it := range items {
			if err := checkStrict(path+".items["+strconv.Itoa(i)+"]", it); err != nil {
				return err
			}
		}
	default:
		if err := checkStrict(path+".items", items); err != nil {
			return err
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, sub := range alts {
			if err := checkStrict(path+".anyOf["+strconv.Itoa(i)+"]", sub); err != nil {
				return err
			}
		}
	}
	for _, defs := range []string{"$defs", "definitions"} {
		m, _ := s[defs].(map[string]any)
		for _, name := range sortedKeys(m) {
			if err := checkStrict(path+"."+defs+"."+name, m[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// isObjectSchema reports whether s describes a JSON object.
func isObjectSchema(s map[string]any) bool {
	if _, ok := s["properties"]; ok {
		return true
	}
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// moreUnsupportedStrict are keywords the conversion refuses on top of
// unsupportedStrict: they constrain objects in ways a closed, all-required
// object cannot express.
var moreUnsupportedStrict = []string{"unevaluatedProperties", "propertyNames", "dependencies"}

// shape records, for one schema node, how the strict form's arguments map
// back to the original's: which properties were optional (their null means
// "absent") and where below they are.
type shape struct {
	drop  map[string]bool
	props map[string]*shape
	items *shape
	tuple []*shape
	alt   *shape // the only anyOf alternative with something to map
	ref   string // a local $ref, resolved when mapping
}

// restorer maps a strict-converted tool's arguments back to the shape of
// its original schema. A nil restorer maps nothing.
type restorer struct {
	root *shape
	defs map[string]*shape
	// maxSteps bounds the work of one restore; 0 means maxRestoreSteps.
	maxSteps int
}

// strictTool converts a tool parameter schema to the form strict mode
// accepts and returns the mapping back, or an error saying why it cannot:
// every object schema at any depth gets "additionalProperties": false and
// lists all its properties as required; a property that was optional
// becomes nullable, and its null is dropped again from the model's
// arguments by the restorer. Property order is kept. An empty schema is a
// tool without arguments: the closed empty object.
func strictTool(schema json.RawMessage) (json.RawMessage, *restorer, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{},"required":[],"additionalProperties":false}`), nil, nil
	}
	root, err := decodeOrdered(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("parameter schema is not JSON: %w", err)
	}
	o, ok := root.(*object)
	if !ok || !isObjectNode(o) {
		return nil, nil, errors.New("$: the root must be an object schema")
	}
	if _, ok := o.get("anyOf"); ok {
		return nil, nil, errors.New("$: anyOf is not allowed at the root")
	}
	cv := converter{root: o, defs: map[string]*shape{}, known: map[string]bool{"#": true}, done: map[string]bool{}}
	for _, defs := range []string{"$defs", "definitions"} {
		d, _ := o.vals[defs].(*object)
		if d == nil {
			continue
		}
		for _, name := range d.keys {
			cv.known[defs+"/"+name] = true
		}
	}
	// Definitions first, so that a reference to one converted already
	// knows whether it maps anything.
	for _, defs := range []string{"$defs", "definitions"} {
		d, _ := o.vals[defs].(*object)
		if d == nil {
			continue
		}
		for _, name := range d.keys {
			s, err := cv.convert("$."+defs+"."+name, d.vals[name])
			if err != nil {
				return nil, nil, err
			}
			if s != nil {
				cv.defs[defs+"/"+name] = s
			}
			cv.done[defs+"/"+name] = true
		}
	}
	s, err := cv.convert("$", o)
	if err != nil {
		return nil, nil, err
	}
	out, err := marshalOrdered(o)
	if err != nil {
		return nil, nil, fmt.Errorf("encode strict schema: %w", err)
	}
	if s == nil && len(cv.defs) == 0 {
		return out, nil, nil
	}
	return out, &restorer{root: s, defs: cv.defs}, nil
}

type converter struct {
	root  *object           // the original schema, for resolving $ref
	defs  map[string]*shape // the definitions' mappings, by refKey
	known map[string]bool   // the definitions that exist, and "#"
	done  map[string]bool   // the definitions converted so far
}

// convert makes the schema node v strict in place and returns its mapping,
// nil when there is nothing to map below it.
func (cv *converter) convert(path string, v any) (*shape, error) {
	s, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object", path)
	}
	for _, k := range append(slices.Clone(unsupportedStrict), moreUnsupportedStrict...) {
		if _, ok := s.get(k); ok {
			return nil, fmt.Errorf("%s: %q is not supported in strict mode", path, k)
		}
	}
	out := &shape{}
	steps := []func(string, *object, *shape) error{cv.convertRef, cv.convertObject, cv.convertItems, cv.convertAnyOf, cv.convertDefs}
	for _, step := range steps {
		if err := step(path, s, out); err != nil {
			return nil, err
		}
	}
	if out.ref == "" && out.drop == nil && out.props == nil && out.items == nil && out.tuple == nil && out.alt == nil {
		return nil, nil
	}
	return out, nil
}

// convertRef keeps a $ref to a local definition that maps something.
func (cv *converter) convertRef(path string, s *object, out *shape) error {
	ref, ok := s.vals["$ref"]
	if !ok {
		return nil
	}
	r, _ := ref.(string)
	key, ok := refKey(r)
	if !ok {
		return fmt.Errorf("%s: $ref %q is not a local definition", path, r)
	}
	if !cv.known[key] {
		return fmt.Errorf("%s: $ref %q names no definition", path, r)
	}
	// A definition known to map nothing needs no reference; one not
	// converted yet (or the root) is kept, to be looked up when
	// mapping.
	if !cv.done[key] || cv.defs[key] != nil {
		out.ref = key
	}
	return nil
}

// convertObject closes an object node (additionalProperties false), makes
// every property required, and an optional one nullable, to be dropped
// again when its value comes back null.
func (cv *converter) convertObject(path string, s *object, out *shape) error {
	if !isObjectNode(s) {
		return nil
	}
	switch ap, ok := s.get("additionalProperties"); {
	case !ok:
		s.set("additionalProperties", false)
	case ap != false:
		return fmt.Errorf("%s: additionalProperties must be false (it admits undeclared properties)", path)
	}
	props, _ := s.vals["properties"].(*object)
	if p, ok := s.get("properties"); ok && props == nil {
		return fmt.Errorf("%s: properties is %s, not an object", path, kindOf(p))
	}
	if props == nil {
		props = newObject()
		s.set("properties", props)
	}
	required := map[string]bool{}
	if rs, ok := s.vals["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	all := make([]any, 0, len(props.keys))
	for _, name := range props.keys {
		all = append(all, name)
		ppath := path + ".properties." + name
		child, ok := props.vals[name].(*object)
		if !ok {
			return fmt.Errorf("%s: a schema must be an object", ppath)
		}
		optional := !required[name] && !cv.acceptsNull(child, nil)
		cs, err := cv.convert(ppath, child)
		if err != nil {
			return err
		}
		if !typed(child) {
			return fmt.Errorf("%s: strict mode needs a type", ppath)
		}
		if optional {
			props.vals[name] = nullable(child)
			if out.drop == nil {
				out.drop = map[string]bool{}
			}
			out.drop[name] = true
		}
		if cs != nil {
			if out.props == nil {
				out.props = map[string]*shape{}
			}
			out.props[name] = cs
		}
	}
	s.set("required", all)
	return nil
}

// convertItems converts an array's items, one schema or a tuple.
func (cv *converter) convertItems(path string, s *object, out *shape) error {
	switch items := s.vals["items"].(type) {
	case nil:
	case []any:
		var some bool
		tuple := make([]*shape, len(items))
		for i, it := range items {
			cs, err := cv.convert(path+".items["+strconv.Itoa(i)+"]", it)
			if err != nil {
				return err
			}
			tuple[i], some = cs, some || cs != nil
		}
		if some {
			out.tuple = tuple
		}
	default:
		cs, err := cv.convert(path+".items", items)
		if err != nil {
			return err
		}
		out.items = cs
	}
	return nil
}

// convertAnyOf converts each alternative; at most one may map anything.
func (cv *converter) convertAnyOf(path string, s *object, out *shape) error {
	alts, ok := s.vals["anyOf"].([]any)
	if !ok {
		return nil
	}
	objects := 0
	for i, sub := range alts {
		cs, err := cv.convert(path+".anyOf["+strconv.Itoa(i)+"]", sub)
		if err != nil {
			return err
		}
		if o, ok := sub.(*object); ok && (isObjectNode(o) || o.vals["$ref"] != nil) {
			objects++
		}
		if cs != nil {
			if out.alt != nil {
				return fmt.Errorf("%s: optional properties in more than one anyOf alternative cannot be mapped back", path)
			}
			out.alt = cs
		}
	}
	if out.alt != nil && objects > 1 {
		return fmt.Errorf("%s: optional properties in one of several object alternatives cannot be mapped back", path)
	}
	return nil
}

// convertDefs converts a nested schema's definitions, for strictness
// alone: only the root's are referred to by "#/$defs/…".
func (cv *converter) convertDefs(path string, s *object, out *shape) error {
	if path == "$" {
		return nil
	}
	// Only the root's definitions are referred to by "#/$defs/…";
	// nested ones are converted for strictness alone.
	for _, defs := range []string{"$defs", "definitions"} {
		d, _ := s.vals[defs].(*object)
		if d == nil {
			continue
		}
		for _, name := range d.keys {
			if _, err := cv.convert(path+"."+defs+"."+name, d.vals[name]); err != nil {
				return err
			}
		}
	}
	return nil
}

// refKey names the definition a local $ref points at: "$defs/x",
// "definitions/x", or "#" for the root.
func refKey(ref string) (string, bool) {
	if ref == "#" {
		return "#", true
	}
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, p); ok && name != "" && !strings.Contains(name, "/") {
			return strings.TrimPrefix(p, "#/") + name, true
		}
	}
	return "", false
}

// isObjectNode reports whether s describes a JSON object.
func isObjectNode(s *object) bool {
	if _, ok := s.get("properties"); ok {
		return true
	}
	switch t := s.vals["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

// typed reports whether s says what values it takes, as strict mode
// needs.
func typed(s *object) bool {
	for _, k := range []string{"type", "anyOf", "$ref", "enum", "const"} {
		if _, ok := s.get(k); ok {
			return true
		}
	}
	return false
}

// acceptsNull reports whether the original schema s admits null: such a
// property's null is the model's own value, not the strict form's
// "absent", and is kept. A local $ref is followed (seen holds the
// definitions on the way, so that a cycle ends); the definitions are
// already converted then, which leaves their own types as they were.
func (cv *converter) acceptsNull(s *object, seen map[string]bool) bool {
	switch t := s.vals["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if e, ok := s.vals["enum"].([]any); ok && slices.Contains(e, nil) {
		return true
	}
	if c, ok := s.get("const"); ok && c == nil {
		return true
	}
	if r, ok := s.vals["$ref"].(string); ok {
		if key, ok := refKey(r); ok && !seen[key] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[key] = true
			if d := cv.definition(key); d != nil && cv.acceptsNull(d, seen) {
				return true
			}
		}
	}
	if alts, ok := s.vals["anyOf"].([]any); ok {
		for _, a := range alts {
			if o, ok := a.(*object); ok && cv.acceptsNull(o, seen) {
				return true
			}
		}
	}
	return false
}

// definition is the schema a refKey names, nil when there is none.
func (cv *converter) definition(key string) *object {
	if key == "#" {
		return cv.root
	}
	defs, name, _ := strings.Cut(key, "/")
	d, _ := cv.root.vals[defs].(*object)
	if d == nil {
		return nil
	}
	o, _ := d.vals[name].(*object)
	return o
}

// nullable returns s made to admit null as well: "null" added to its type
// (and enum), a null alternative added to its anyOf, or s wrapped in
// anyOf with null when it is a $ref or a const.
func nullable(s *object) any {
	_, hasConst := s.get("const")
	_, hasRef := s.get("$ref")
	if alts, ok := s.vals["anyOf"].([]any); ok && !hasConst && !hasRef {
		s.set("anyOf", append(alts, nullSchema()))
		return s
	}
	if !hasConst && !hasRef {
		switch t := s.vals["type"].(type) {
		case string:
			s.set("type", []any{t, "null"})
			addNullEnum(s)
			return s
		case []any:
			s.set("type", append(t, "null"))
			addNullEnum(s)
			return s
		}
	}
	w := newObject()
	w.set("anyOf", []any{s, nullSchema()})
	return w
}

func addNullEnum(s *object) {
	if e, ok := s.vals["enum"].([]any); ok {
		s.set("enum", append(e, nil))
	}
}

func nullSchema() *object {
	o := newObject()
	o.set("type", "null")
	return o
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "an object"
}

// restore maps the model's argument text back to the original schema's
// shape: a null given for a property the original made optional (and did
// not allow null for) is dropped, at any depth. Text that is not JSON, or
// has nothing to drop, is returned unchanged, byte for byte; so is text
// whose mapping would take more than maxSteps steps (the guards then see
// the strict form's nulls rather than the model waiting on a restore).
func (r *restorer) restore(args string) string {
	if r == nil {
		return args
	}
	v, err := decodeOrdered([]byte(args))
	if err != nil {
		return args
	}
	w := restoreWalk{r: r, seen: map[walkKey]bool{}, left: r.maxSteps}
	if w.left <= 0 {
		w.left = maxRestoreSteps
	}
	if !w.apply(v, r.root) || w.over {
		return args
	}
	out, err := marshalOrdered(v)
	if err != nil {
		return args
	}
	return string(out)
}

// maxRestoreSteps bounds one restore: the (value, mapping) pairs it visits.
// Each pair is visited once, so a schema whose definitions refer to
// themselves along several paths ($ref next to anyOf:[{$ref}]) costs one
// visit per pair, not one per path.
const maxRestoreSteps = 1 << 16

// walkKey is one value of the arguments (an object, or an array by its
// first element) under one mapping.
type walkKey struct {
	v any
	s *shape
}

// restoreWalk is the state of one restore.
type restoreWalk struct {
	r    *restorer
	seen map[walkKey]bool
	left int
	over bool
}

func (w *restoreWalk) apply(v any, s *shape) bool {
	if s == nil || w.over {
		return false
	}
	var id any
	switch t := v.(type) {
	case *object:
		id = t
	case []any:
		if len(t) == 0 {
			return false
		}
		id = &t[0]
	default:
		return false // a scalar has nothing below it to drop
	}
	k := walkKey{id, s}
	if w.seen[k] {
		return false
	}
	w.seen[k] = true
	if w.left--; w.left < 0 {
		w.over = true
		return false
	}
	changed := false
	switch s.ref {
	case "":
	case "#":
		changed = w.apply(v, w.r.root)
	default:
		changed = w.apply(v, w.r.defs[s.ref])
	}
	if s.alt != nil && w.apply(v, s.alt) {
		changed = true
	}
	switch t := v.(type) {
	case *object:
		for _, k := range slices.Clone(t.keys) {
			if s.drop[k] && t.vals[k] == nil {
				t.del(k)
				changed = true
				continue
			}
			if w.apply(t.vals[k], s.props[k]) {
				changed = true
			}
		}
	case []any:
		for i, e := range t {
			c := s.items
			if s.tuple != nil {
				c = nil
				if i < len(s.tuple) {
					c = s.tuple[i]
				}
			}
			if w.apply(e, c) {
				changed = true
			}
		}
	}
	return changed
}
