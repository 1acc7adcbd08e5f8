package jsonschema

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// equal is deep JSON equality: numbers compare numerically, object key order
// does not matter, arrays compare element by element.
func equal(a, b gjson.Result) bool {
	ka, kb := kindOf(a), kindOf(b)
	if ka != kb {
		return false
	}
	switch ka {
	case kNull:
		return true
	case kBoolean:
		return a.Type == b.Type
	case kString:
		return a.Str == b.Str
	case kNumber:
		return numEqual(a, b)
	case kArray:
		return arrayEqual(a, b)
	}
	return objectEqual(a, b)
}

// numEqual compares numerically. Integer literals beyond float64 precision
// that map to the same float are told apart by their text (JSON has no
// leading zeros, so equal integers are spelled alike, except -0 and 0).
func numEqual(a, b gjson.Result) bool {
	if a.Num != b.Num {
		return false
	}
	if a.Num >= 1<<53 || a.Num <= -(1<<53) {
		if strings.IndexAny(a.Raw, ".eE") < 0 && strings.IndexAny(b.Raw, ".eE") < 0 {
			return a.Raw == b.Raw
		}
	}
	return true
}

func arrayEqual(a, b gjson.Result) bool {
	// Walk a, fetching b's elements in step with a second cursor.
	bs := b.Array()
	i, ok := 0, true
	a.ForEach(func(_, v gjson.Result) bool {
		if i >= len(bs) || !equal(v, bs[i]) {
			ok = false
			return false
		}
		i++
		return true
	})
	return ok && i == len(bs)
}

func objectEqual(a, b gjson.Result) bool {
	type entry struct {
		key string
		val gjson.Result
	}
	var bs []entry
	b.ForEach(func(k, v gjson.Result) bool {
		bs = append(bs, entry{k.Str, v})
		return true
	})
	n, ok := 0, true
	a.ForEach(func(k, v gjson.Result) bool {
		n++
		for _, e := range bs {
			if e.key == k.Str {
				ok = equal(v, e.val)
				return ok
			}
		}
		ok = false
		return false
	})
	return ok && n == len(bs)
}

// showMax is how many bytes of a document value a message quotes.
const showMax = 64

// show renders a document value for a message, compacted and truncated.
func show(r gjson.Result) string { return display(r.Raw, showMax) }

// display compacts JSON text (drops whitespace outside strings) into a new
// string, cut to about max bytes with "..." marking the cut.
func display(raw string, max int) string {
	var b strings.Builder
	b.Grow(min(len(raw), max+4))
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inStr && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			continue
		}
		if b.Len() >= max && len(raw)-i > 4 && utf8.RuneStart(c) {
			if raw[0] == '"' {
				b.WriteString(`..."`)
			} else {
				b.WriteString("...")
			}
			return b.String()
		}
		b.WriteByte(c)
		switch {
		case esc:
			esc = false
		case c == '\\' && inStr:
			esc = true
		case c == '"':
			inStr = !inStr
		}
	}
	return b.String()
}
