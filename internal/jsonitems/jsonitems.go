// Package jsonitems reads the items of a JSON array (or the one item an
// object is) and each object item's members in one pass over the bytes,
// answering what gjson's ForEach answers: gjson scans each record once to
// find its end and again to list its members, this reads each byte once.
// Its keys, raws and texts are gjson's (a key or a string with an escape
// is unescaped as gjson does, a number's text is gjson's String, a nested
// array or object is listed by its kind alone). On a byte that JSON's
// grammar does not allow there, Scan reports false and the caller reads
// the value with gjson instead, as lenient as before. The items primitive
// (services.ItemsValue) and the entity rule (contract) read records
// through it.
package jsonitems

import (
	"github.com/agentwarden/warden/internal/wordscan"
	"github.com/tidwall/gjson"
)

// Kinds of a value, as the walk and items primitives write them.
const (
	KindNull   byte = 'n'
	KindFalse  byte = 'f'
	KindTrue   byte = 't'
	KindNumber byte = '#'
	KindString byte = 's'
	KindArray  byte = '['
	KindObject byte = '{'
)

// List is the items a Scan read. Its strings alias the scanned bytes
// (an unescaped key or text is a string of its own); a List is reused by
// the next Scan.
type List struct {
	items   []item
	members []Member
}

type item struct {
	Value
	first, n int32 // members[first:first+n], an object's
}

// Value is one value of a list: its kind, its raw JSON (empty for an array
// or an object) and its text (empty for null, an array or an object).
type Value struct {
	Kind      byte
	Raw, Text string
}

// Member is one member of an object item, in document order.
type Member struct {
	Key string
	Value
}

// Len is the number of items read.
func (l *List) Len() int { return len(l.items) }

// Item is item i's kind, raw JSON and text.
func (l *List) Item(i int) (kind byte, raw, text string) {
	it := &l.items[i]
	return it.Kind, it.Raw, it.Text
}

// Members are item i's members (none unless it is an object).
func (l *List) Members(i int) []Member {
	it := &l.items[i]
	return l.members[it.first : it.first+it.n]
}

// EachMember gives item i's members to fn in order.
func (l *List) EachMember(i int, fn func(key string, kind byte, raw, text string)) {
	for _, m := range l.Members(i) {
		fn(m.Key, m.Kind, m.Raw, m.Text)
	}
}

// Reset empties l, keeping no reference to what it read.
func (l *List) Reset() {
	clear(l.items)
	clear(l.members)
	l.items, l.members = l.items[:0], l.members[:0]
}

// Scan reads the items of raw, a JSON array or object as gjson's Raw holds
// it, into l: at most limit of them (limit > 0), each counted only once
// what follows it is known to be a comma or the array's end, so that it
// has read nothing gjson would not. It reports false, with l emptied, on
// input that is not JSON there.
func (l *List) Scan(raw string, limit int) bool {
	l.Reset()
	if l.scan(raw, limit) {
		return true
	}
	l.Reset()
	return false
}

func (l *List) scan(raw string, limit int) bool {
	if raw == "" || limit <= 0 {
		return false
	}
	if raw[0] == '{' {
		end := l.item(raw, 0)
		return end >= 0 && SkipSpace(raw, end) == len(raw)
	}
	if raw[0] != '[' {
		return false
	}
	i := SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return SkipSpace(raw, i+1) == len(raw) // no items
	}
	for {
		if i = l.item(raw, i); i < 0 {
			return false
		}
		if i = SkipSpace(raw, i); i >= len(raw) {
			return false
		}
		closed := raw[i] == ']'
		switch {
		case raw[i] == ',':
			i = SkipSpace(raw, i+1)
		case closed:
			if SkipSpace(raw, i+1) != len(raw) {
				return false
			}
		default:
			return false
		}
		if len(l.items) == limit || closed {
			return true
		}
	}
}

// item reads the item at raw[i:] (no space before it) and, for an object,
// its members; it returns where the item ends, -1 when it is not JSON.
func (l *List) item(raw string, i int) int {
	if i >= len(raw) || raw[i] != '{' {
		v, end := value(raw, i)
		if end >= 0 {
			l.items = append(l.items, item{Value: v})
		}
		return end
	}
	l.items = append(l.items, item{Value: Value{Kind: KindObject}, first: int32(len(l.members))})
	it := &l.items[len(l.items)-1]
	i = SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return -1
		}
		end, escaped := StringEnd(raw, i)
		if end < 0 {
			return -1
		}
		key := raw[i+1 : end-1]
		if escaped {
			key = gjson.Parse(raw[i:end]).Str
		}
		if i = SkipSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return -1
		}
		v, end := value(raw, SkipSpace(raw, i+1))
		if end < 0 {
			return -1
		}
		l.members = append(l.members, Member{Key: key, Value: v})
		it.n++
		if i = SkipSpace(raw, end); i >= len(raw) {
			return -1
		}
		switch raw[i] {
		case ',':
			i = SkipSpace(raw, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// value reads the value at raw[i:] and returns where it ends, -1 when it
// is not JSON. A nested array or object is read by its kind alone and
// skipped.
func value(raw string, i int) (Value, int) {
	if i >= len(raw) {
		return Value{}, -1
	}
	switch c := raw[i]; {
	case c == '{' || c == '[':
		end := SkipContainer(raw, i)
		if c == '[' {
			return Value{Kind: KindArray}, end
		}
		return Value{Kind: KindObject}, end
	case c == '"':
		end, escaped := StringEnd(raw, i)
		if end < 0 {
			return Value{}, -1
		}
		text := raw[i+1 : end-1]
		if escaped {
			text = gjson.Parse(raw[i:end]).Str
		}
		return Value{KindString, raw[i:end], text}, end
	case c == '-' || c >= '0' && c <= '9':
		end, integer := NumberEnd(raw, i)
		if end < 0 {
			return Value{}, -1
		}
		text := raw[i:end]
		if !integer {
			text = gjson.Parse(text).String()
		}
		return Value{KindNumber, raw[i:end], text}, end
	case c == 't' && len(raw)-i >= 4 && raw[i:i+4] == "true":
		return Value{KindTrue, raw[i : i+4], "true"}, i + 4
	case c == 'f' && len(raw)-i >= 5 && raw[i:i+5] == "false":
		return Value{KindFalse, raw[i : i+5], "false"}, i + 5
	case c == 'n' && len(raw)-i >= 4 && raw[i:i+4] == "null":
		return Value{KindNull, raw[i : i+4], ""}, i + 4
	}
	return Value{}, -1
}

// SkipContainer is the end of the array or object at raw[i], -1 when it
// is not JSON (or nests deeper than a pass keeps track of).
func SkipContainer(raw string, i int) int {
	var stack [64]byte
	depth := 0
	for {
		// a value at i
		if i >= len(raw) {
			return -1
		}
		switch c := raw[i]; {
		case c == '{' || c == '[':
			if depth == len(stack) {
				return -1
			}
			stack[depth] = c
			depth++
			i = SkipSpace(raw, i+1)
			if i < len(raw) && raw[i] == c+2 { // '}' and ']' are 2 past '{' and '['
				depth--
				i++
				break
			}
			if c == '{' {
				if i = MemberName(raw, i); i < 0 {
					return -1
				}
				i = SkipSpace(raw, i)
			}
			continue
		case c == '"':
			if i, _ = StringEnd(raw, i); i < 0 {
				return -1
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, _ = NumberEnd(raw, i); i < 0 {
				return -1
			}
		case c == 't' && len(raw)-i >= 4 && raw[i:i+4] == "true",
			c == 'n' && len(raw)-i >= 4 && raw[i:i+4] == "null":
			i += 4
		case c == 'f' && len(raw)-i >= 5 && raw[i:i+5] == "false":
			i += 5
		default:
			return -1
		}
		// after a value: a comma, or the end of its containers
		for {
			if depth == 0 {
				return i
			}
			if i = SkipSpace(raw, i); i >= len(raw) {
				return -1
			}
			top := stack[depth-1]
			if raw[i] == ',' {
				i = SkipSpace(raw, i+1)
				if top == '{' {
					if i = MemberName(raw, i); i < 0 {
						return -1
					}
					i = SkipSpace(raw, i)
				}
				break
			}
			if raw[i] == top+2 {
				depth--
				i++
				continue
			}
			return -1
		}
	}
}

// SkipSpace is the index of the first byte at or after i that is not JSON
// whitespace.
func SkipSpace(raw string, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// MemberName reads a member's name and its colon at i and returns where
// its value starts, -1 when they are not there.
func MemberName(raw string, i int) int {
	if i >= len(raw) || raw[i] != '"' {
		return -1
	}
	end, _ := StringEnd(raw, i)
	if end < 0 {
		return -1
	}
	if end = SkipSpace(raw, end); end >= len(raw) || raw[end] != ':' {
		return -1
	}
	return end + 1
}

// StringEnd is the end of the string at i (after its closing quote), -1
// when it has none, and whether it has an escape.
func StringEnd(raw string, i int) (int, bool) {
	escaped := false
	j := i + 1
	for j+8 <= len(raw) && wordscan.Plain(wordscan.Word(raw, j)) {
		j += 8 // eight plain ASCII bytes
	}
	for ; j < len(raw); j++ {
		switch raw[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			j++
		}
	}
	return -1, false
}

// NumberEnd is the end of the JSON number at i (-1 when it is not one)
// and whether it is an integer (digits after an optional minus), which
// gjson's String writes as it is.
func NumberEnd(raw string, i int) (int, bool) {
	j := i
	if raw[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for k < len(raw) && raw[k] >= '0' && raw[k] <= '9' {
			k++
		}
		return k - j
	}
	switch n := digits(); {
	case n == 0, n > 1 && raw[j] == '0':
		return -1, false
	default:
		j += n
	}
	integer := true
	if j < len(raw) && raw[j] == '.' {
		j++
		n := digits()
		if n == 0 {
			return -1, false
		}
		j += n
		integer = false
	}
	if j < len(raw) && (raw[j] == 'e' || raw[j] == 'E') {
		j++
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		n := digits()
		if n == 0 {
			return -1, false
		}
		j += n
		integer = false
	}
	return j, integer
}
