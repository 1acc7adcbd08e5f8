// Package yamljson converts YAML to JSON exactly: keys keep the order they
// were written in, and a number keeps its literal (1234567890123456789,
// 1.0 and a 30-digit integer stay as written). A conversion through Go
// values (map[string]any, float64) would sort the keys and round every
// integer past 2^53.
//
// What YAML writes that JSON cannot (0x1F, 1_000, +1, .inf, a timestamp)
// is converted through its decoded value, and refused when there is none
// (.nan, .inf). A key that is not a string or a scalar, and a key written
// twice in one mapping, are errors. Anchors and aliases are followed, and
// merge keys (<<) merge as YAML says: the mapping's own keys win.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// ErrYAML wraps every error of ToJSON.
var ErrYAML = errors.New("yamljson")

// maxDepth bounds the nesting of a document (aliases included), so that
// an alias bomb cannot make the output grow without end.
const maxDepth = 1000

// maxOut bounds the JSON a document converts to.
const maxOut = 8 << 20

// maxAliases bounds the aliases a document's conversion follows.
const maxAliases = 10000

// ToJSON converts one YAML document to JSON. An empty document is null.
func ToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrYAML, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return []byte("null"), nil
	}
	c := &converter{}
	if err := c.write(doc.Content[0], 0); err != nil {
		return nil, err
	}
	return c.b.Bytes(), nil
}

type converter struct {
	b       bytes.Buffer
	aliases int
}

func (c *converter) write(n *yaml.Node, depth int) error {
	b := &c.b
	if depth > maxDepth {
		return fmt.Errorf("%w: line %d: nested deeper than %d", ErrYAML, n.Line, maxDepth)
	}
	if b.Len() > maxOut {
		return fmt.Errorf("%w: the document converts to more than %d bytes", ErrYAML, maxOut)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if c.aliases++; c.aliases > maxAliases {
			return fmt.Errorf("%w: line %d: more than %d aliases followed", ErrYAML, n.Line, maxAliases)
		}
		return c.write(n.Alias, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return c.write(n.Content[0], depth+1)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.write(e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		pairs, err := entries(n, depth)
		if err != nil {
			return err
		}
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, p.key)
			b.WriteByte(':')
			if err := c.write(p.value, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return scalar(b, n)
	}
	return fmt.Errorf("%w: line %d: unexpected node", ErrYAML, n.Line)
}

type pair struct {
	key   string
	value *yaml.Node
}

// entries are a mapping's keys and values in order, merge keys applied.
func entries(n *yaml.Node, depth int) ([]pair, error) {
	var own, merged []pair
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			srcs := []*yaml.Node{v}
			if deref(v).Kind == yaml.SequenceNode {
				srcs = deref(v).Content
			}
			for _, s := range srcs {
				s = deref(s)
				if s.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("%w: line %d: a merge key takes a mapping", ErrYAML, v.Line)
				}
				if depth > maxDepth {
					return nil, fmt.Errorf("%w: line %d: nested deeper than %d", ErrYAML, v.Line, maxDepth)
				}
				ps, err := entries(s, depth+1)
				if err != nil {
					return nil, err
				}
				merged = append(merged, ps...)
			}
			continue
		}
		key, err := keyOf(k)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("%w: line %d: key %q is written twice", ErrYAML, k.Line, key)
		}
		seen[key] = true
		own = append(own, pair{key, v})
	}
	for _, p := range merged {
		if !seen[p.key] {
			seen[p.key] = true
			own = append(own, p)
		}
	}
	return own, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// keyOf is a mapping key as JSON has it: a scalar's text.
func keyOf(k *yaml.Node) (string, error) {
	k = deref(k)
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%w: line %d: a key must be a scalar", ErrYAML, k.Line)
	}
	if k.Tag == "!!null" {
		return "null", nil
	}
	return k.Value, nil
}

func scalar(b *bytes.Buffer, n *yaml.Node) error {
	tag := n.ShortTag()
	if tag == "!!str" && n.Style == 0 && jsonNumber(n.Value) {
		// A plain number no float64 holds (1e400): YAML's core schema
		// makes it a float; the decoder, unable to, a string.
		tag = "!!float"
	}
	switch tag {
	case "!!str", "!!binary":
		writeString(b, n.Value)
		return nil
	case "!!null":
		b.WriteString("null")
		return nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrYAML, n.Line, err)
		}
		fmt.Fprint(b, v)
		return nil
	case "!!int", "!!float":
		if jsonNumber(n.Value) {
			b.WriteString(n.Value)
			return nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrYAML, n.Line, err)
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return fmt.Errorf("%w: line %d: %s is not a JSON number", ErrYAML, n.Line, n.Value)
		}
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrYAML, n.Line, err)
		}
		b.Write(out)
		return nil
	}
	// A timestamp or a custom tag: its text, as a string.
	writeString(b, n.Value)
	return nil
}

// jsonNumber reports whether s is a number as JSON writes it.
func jsonNumber(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t") {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && string(n) == s
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
