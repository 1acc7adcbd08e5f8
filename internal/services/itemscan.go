package services

import (
	"encoding/binary"

	"github.com/tidwall/gjson"
)

// scanItems is ItemsValue for an array or an object read in one pass over
// its bytes raw, appended to the answer's first 5 bytes in out. gjson's
// ForEach scans each record once to find its end and again to list its
// members; scanItems reads each byte once. Its items, members, keys, raws
// and texts are gjson's (a key or a string with an escape is unescaped as
// gjson does, a number's text is gjson's String). On a byte that JSON's
// grammar does not allow there, it reports ok false and the caller lists
// the value with gjson, as lenient as before. It stops after limit items
// (limit > 0), each counted only once what follows it is known to be a
// comma or the array's end, so that it has read nothing gjson would not.
func scanItems(out []byte, raw string, limit int) ([]byte, bool) {
	n := 0
	if raw[0] == '{' {
		out, end := scanItem(out, raw, 0)
		if end < 0 || skipSpace(raw, end) != len(raw) {
			return nil, false
		}
		binary.LittleEndian.PutUint32(out[1:], 1)
		return out, true
	}
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		if skipSpace(raw, i+1) != len(raw) {
			return nil, false
		}
		return out, true // no items
	}
	for {
		if out, i = scanItem(out, raw, i); i < 0 {
			return nil, false
		}
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, false
		}
		closed := raw[i] == ']'
		switch {
		case raw[i] == ',':
			i = skipSpace(raw, i+1)
		case closed:
			if skipSpace(raw, i+1) != len(raw) {
				return nil, false
			}
		default:
			return nil, false
		}
		n++
		if n == limit || closed {
			binary.LittleEndian.PutUint32(out[1:], uint32(n))
			return out, true
		}
	}
}

// scanItem appends the item at raw[i:] (no space before it) and, for an
// object, its members; it returns where the item ends, -1 when it is not
// JSON.
func scanItem(out []byte, raw string, i int) ([]byte, int) {
	if i >= len(raw) || raw[i] != '{' {
		return scanValue(out, raw, i)
	}
	out = append(out, WalkObject, 0, 0, 0, 0, 0, 0, 0, 0)
	at := len(out)
	out = append(out, 0, 0, 0, 0)
	m := 0
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return out, i + 1
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return out, -1
		}
		end, escaped := stringEnd(raw, i)
		if end < 0 {
			return out, -1
		}
		key := raw[i+1 : end-1]
		if escaped {
			key = gjson.Parse(raw[i:end]).Str
		}
		if i = skipSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return out, -1
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(key)))
		out = append(out, key...)
		if out, i = scanValue(out, raw, skipSpace(raw, i+1)); i < 0 {
			return out, -1
		}
		m++
		if i = skipSpace(raw, i); i >= len(raw) {
			return out, -1
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			binary.LittleEndian.PutUint32(out[at:], uint32(m))
			return out, i + 1
		default:
			return out, -1
		}
	}
}

// scanValue appends one value of an items answer (as appendItemValue) for
// the value at raw[i:] and returns where it ends, -1 when it is not JSON.
// A nested array or object is listed by its kind alone and skipped.
func scanValue(out []byte, raw string, i int) ([]byte, int) {
	if i >= len(raw) {
		return out, -1
	}
	var kind byte
	var end int
	var text string
	switch c := raw[i]; {
	case c == '{' || c == '[':
		if end = skipContainer(raw, i); end < 0 {
			return out, -1
		}
		kind = WalkObject
		if c == '[' {
			kind = WalkArray
		}
		return append(out, kind, 0, 0, 0, 0, 0, 0, 0, 0), end
	case c == '"':
		var escaped bool
		if end, escaped = stringEnd(raw, i); end < 0 {
			return out, -1
		}
		kind, text = WalkString, raw[i+1:end-1]
		if escaped {
			text = gjson.Parse(raw[i:end]).Str
		}
	case c == '-' || c >= '0' && c <= '9':
		var integer bool
		if end, integer = numberEnd(raw, i); end < 0 {
			return out, -1
		}
		kind, text = WalkNumber, raw[i:end]
		if !integer {
			text = gjson.Parse(text).String()
		}
	case c == 't' && len(raw)-i >= 4 && raw[i:i+4] == "true":
		kind, end, text = WalkTrue, i+4, "true"
	case c == 'f' && len(raw)-i >= 5 && raw[i:i+5] == "false":
		kind, end, text = WalkFalse, i+5, "false"
	case c == 'n' && len(raw)-i >= 4 && raw[i:i+4] == "null":
		kind, end = WalkNull, i+4
	default:
		return out, -1
	}
	out = append(out, kind)
	out = binary.LittleEndian.AppendUint32(out, uint32(end-i))
	out = append(out, raw[i:end]...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(text)))
	return append(out, text...), end
}

// skipContainer is the end of the array or object at raw[i], -1 when it
// is not JSON (or nests deeper than a pass keeps track of).
func skipContainer(raw string, i int) int {
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
			i = skipSpace(raw, i+1)
			if i < len(raw) && (c == '{' && raw[i] == '}' || c == '[' && raw[i] == ']') {
				depth--
				i++
				break
			}
			if c == '{' {
				if i = memberName(raw, i); i < 0 {
					return -1
				}
				i = skipSpace(raw, i)
			}
			continue
		case c == '"':
			if i, _ = stringEnd(raw, i); i < 0 {
				return -1
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, _ = numberEnd(raw, i); i < 0 {
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
			if i = skipSpace(raw, i); i >= len(raw) {
				return -1
			}
			top := stack[depth-1]
			if raw[i] == ',' {
				i = skipSpace(raw, i+1)
				if top == '{' {
					if i = memberName(raw, i); i < 0 {
						return -1
					}
					i = skipSpace(raw, i)
				}
				break
			}
			if top == '{' && raw[i] == '}' || top == '[' && raw[i] == ']' {
				depth--
				i++
				continue
			}
			return -1
		}
	}
}
