package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
