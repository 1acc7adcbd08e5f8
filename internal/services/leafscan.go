package services

import (
	"github.com/agentwarden/warden/internal/jsonitems"
	"github.com/tidwall/gjson"
)

// scan is leaves for a container read in one pass over its bytes raw.
// gjson's ForEach scans each nested value once to find its end and again
// when the walk goes into it; scan reads each byte once. The leaves, their
// order and their texts are gjson's: a string's text is its bytes between
// the quotes when it has no escape and gjson's unescaping when it has, a
// number is written as gjson's String writes it. On a byte that JSON's
// grammar does not allow there, scan reports ok false with the walker
// emptied (it runs only on an empty one), and the caller walks the value
// with gjson, as lenient as before.
func (w *walker) scan(raw string) (more, ok bool) {
	var stack [64]byte
	depth := 0
	i := 0
	mark := len(w.out)
	fail := func() (bool, bool) {
		w.out, w.n = w.out[:mark], 0
		w.list = w.list[:0]
		w.release()
		return false, false
	}
	for {
		// a value at i
		i = jsonitems.SkipSpace(raw, i)
		if i >= len(raw) {
			return fail()
		}
		// a scalar's end, its text, and whether it is a leaf (null is not)
		var end int
		var text string
		leaf := true
		switch c := raw[i]; {
		case c == '{' || c == '[':
			if depth == len(stack) {
				return fail() // deeper than a pass needs: gjson's walk
			}
			stack[depth] = c
			depth++
			i = jsonitems.SkipSpace(raw, i+1)
			if i < len(raw) && (c == '{' && raw[i] == '}' || c == '[' && raw[i] == ']') {
				depth--
				i++
				end, leaf = i, false
				break
			}
			if c == '{' {
				if i = jsonitems.MemberName(raw, i); i < 0 {
					return fail()
				}
			}
			continue
		case c == '"':
			var escaped bool
			if end, escaped = jsonitems.StringEnd(raw, i); end < 0 {
				return fail()
			}
			text = raw[i+1 : end-1]
			if escaped {
				text = gjson.Parse(raw[i:end]).Str
			}
		case c == '-' || c >= '0' && c <= '9':
			var integer bool
			if end, integer = jsonitems.NumberEnd(raw, i); end < 0 {
				return fail()
			}
			text = raw[i:end]
			if !integer {
				text = gjson.Parse(text).String()
			}
		case c == 't' && len(raw)-i >= 4 && raw[i:i+4] == "true":
			end, text = i+4, "true"
		case c == 'f' && len(raw)-i >= 5 && raw[i:i+5] == "false":
			end, text = i+5, "false"
		case c == 'n' && len(raw)-i >= 4 && raw[i:i+4] == "null":
			end, leaf = i+4, false
		default:
			return fail()
		}
		i = end
		if !delimited(raw, i, stack[:depth]) {
			return fail()
		}
		if leaf && !w.leaf(text) {
			return false, true
		}
		// after a value: a comma, or the end of its containers
		for {
			i = jsonitems.SkipSpace(raw, i)
			if depth == 0 {
				if i != len(raw) {
					return fail()
				}
				return true, true
			}
			if i >= len(raw) {
				return fail()
			}
			top := stack[depth-1]
			if raw[i] == ',' {
				i++
				if top == '{' {
					if i = jsonitems.MemberName(raw, jsonitems.SkipSpace(raw, i)); i < 0 {
						return fail()
					}
				}
				break
			}
			if top == '{' && raw[i] == '}' || top == '[' && raw[i] == ']' {
				depth--
				i++
				continue
			}
			return fail()
		}
	}
}

// delimited reports whether what follows a scalar ending at i is what
// may: a comma or its container's closer (the end, outside any). A leaf is
// counted only once it is known to end there, so that a walk stopped at
// its limit has read nothing gjson would read otherwise.
func delimited(raw string, i int, open []byte) bool {
	i = jsonitems.SkipSpace(raw, i)
	if len(open) == 0 {
		return i == len(raw)
	}
	if i >= len(raw) {
		return false
	}
	c := raw[i]
	return c == ',' || open[len(open)-1] == '{' && c == '}' || open[len(open)-1] == '[' && c == ']'
}
