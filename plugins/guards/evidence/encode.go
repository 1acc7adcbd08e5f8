package evidence

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// The evidence item is written by hand rather than by encoding/json: its
// payload and extracts are raw JSON the size of the response, and
// encoding/json validates and compacts each raw value with a scanner that
// makes an indirect call per byte, which costs most of the guard's time
// inside a guest. The bytes are exactly abi.Marshal's (TestEncodeItem
// checks them against it): raw values come from the request envelope, which
// the host only builds from valid JSON, so they need compacting, not
// validating.

// appendItem appends it as abi.Marshal encodes an abi.EvidenceItem. With
// compact, its payload and extracts are compact JSON already and are
// copied as they are.
func appendItem(b []byte, it *abi.EvidenceItem, compact bool) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, it.ID)
	b = append(b, `,"sourceType":`...)
	b = appendString(b, it.SourceType)
	b = append(b, `,"locator":`...)
	b = appendString(b, it.Locator)
	b = append(b, `,"retrievedAt":`...)
	b = appendString(b, it.RetrievedAt)
	b = append(b, `,"toolCallId":`...)
	b = appendString(b, it.ToolCallID)
	if it.Excerpt != "" {
		b = append(b, `,"excerpt":`...)
		b = appendString(b, it.Excerpt)
	}
	if it.ContentHash != "" {
		b = append(b, `,"contentHash":`...)
		b = appendString(b, it.ContentHash)
	}
	b = append(b, `,"tool":`...)
	b = appendString(b, it.Tool)
	if it.NodeID != "" {
		b = append(b, `,"nodeId":`...)
		b = appendString(b, it.NodeID)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, it.Status.String())
	b = append(b, `,"businessOk":`...)
	b = strconv.AppendBool(b, it.BusinessOK)
	b = append(b, `,"result":`...)
	b = appendString(b, it.Result)
	b = append(b, `,"empty":`...)
	b = strconv.AppendBool(b, it.Empty)
	if it.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	if it.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(it.Size), 10)
	}
	if len(it.Extracts) > 0 {
		b = append(b, `,"extracts":{`...)
		for i, k := range sortedKeys(it.Extracts) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendRaw(b, it.Extracts[k], compact)
		}
		b = append(b, '}')
	}
	if len(it.Counts) > 0 {
		b = append(b, `,"counts":{`...)
		for i, k := range sortedKeys(it.Counts) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(it.Counts[k]), 10)
		}
		b = append(b, '}')
	}
	if len(it.Values) > 0 {
		b = append(b, `,"values":[`...)
		for i, v := range it.Values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, v)
		}
		b = append(b, ']')
	}
	if len(it.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = appendRaw(b, it.Payload, compact)
	}
	return append(b, '}')
}

// appendEntity appends e as abi.Marshal encodes an abi.Entity; with
// compact, its raw values are compact JSON already.
func appendEntity(b []byte, e *abi.Entity, compact bool) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"id":`...)
	b = appendString(b, e.ID)
	if len(e.IDJSON) > 0 {
		b = append(b, `,"idJson":`...)
		b = appendRaw(b, e.IDJSON, compact)
	}
	if e.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, e.Name)
	}
	if len(e.Attrs) > 0 {
		b = append(b, `,"attrs":{`...)
		for i, k := range sortedKeys(e.Attrs) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendRaw(b, e.Attrs[k], compact)
		}
		b = append(b, '}')
	}
	if e.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = appendString(b, e.TaskID)
	}
	return append(b, '}')
}

// appendEntityFields appends the entity f as appendEntity appends the
// abi.Entity the contract makes of it (contract.Extract): the id as its
// text and, when it is not a string, its JSON; the name when there is one;
// the attributes in key order. It sorts f.Attrs.
func appendEntityFields(b []byte, f *contract.EntityFields, compact bool) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, f.Type)
	b = append(b, `,"id":`...)
	b = appendString(b, f.ID)
	if f.IDJSON != "" {
		b = append(b, `,"idJson":`...)
		b = appendRawString(b, f.IDJSON, compact)
	}
	if f.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, f.Name)
	}
	if len(f.Attrs) > 0 {
		sortAttrs(f.Attrs)
		b = appendAttrs(append(b, `,"attrs":{`...), f.Attrs, compact)
	}
	return append(b, '}')
}

// appendAttrs appends the members of an entity's attributes and the
// closing brace; a function of its own, so that its loop is a small one
// inside a guest.
//
//go:noinline
func appendAttrs(b []byte, attrs []contract.EntityAttr, compact bool) []byte {
	for i, a := range attrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a.Key)
		b = append(b, ':')
		b = appendRawString(b, a.Raw, compact)
	}
	return append(b, '}')
}

// sortAttrs sorts attributes by key: by insertion while few (an entity
// has a handful, and a generic sort's calls cost more inside a guest),
// else by slices.SortFunc.
//
//go:noinline
func sortAttrs(a []contract.EntityAttr) {
	if len(a) > 12 {
		slices.SortFunc(a, func(x, y contract.EntityAttr) int { return strings.Compare(x.Key, y.Key) })
		return
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Key < a[j-1].Key; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// appendRaw appends the raw JSON value v compacted, or as it is when it is
// compact already.
func appendRaw(b, v []byte, compact bool) []byte {
	if compact {
		return append(b, v...)
	}
	return appendCompact(b, v, false, -1)
}

// appendRawString is appendRaw for a value held in a string.
func appendRawString(b []byte, v string, compact bool) []byte {
	if compact {
		return append(b, v...)
	}
	return appendCompact(b, []byte(v), false, -1)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendCompact appends the valid JSON src without insignificant
// whitespace, as json.Compact does; with html, '<', '>', '&', U+2028 and
// U+2029 are escaped as json.Marshal escapes them in a json.RawMessage. With
// limit ≥ 0 it stops once limit bytes of output were appended. Runs of bytes
// that stay as they are are copied at once: appending byte by byte is what
// costs most inside a guest.
func appendCompact(b, src []byte, html bool, limit int) []byte {
	start := len(b)
	full := func() bool { return limit >= 0 && len(b)-start >= limit }
	// flush appends src[from:to], cut where the output reaches limit; it
	// reports whether the output is full.
	flush := func(from, to int) bool {
		if limit >= 0 {
			room := limit - (len(b) - start)
			if room <= 0 {
				return true // an escape may have passed the limit
			}
			if to-from > room {
				b = append(b, src[from:from+room]...)
				return true
			}
		}
		b = append(b, src[from:to]...)
		return false
	}
	inString, escaped := false, false
	run := 0 // start of the pending run of src copied as it is
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !inString {
			switch c {
			case ' ', '\t', '\n', '\r':
				if flush(run, i) {
					return b
				}
				run = i + 1
			case '"':
				inString = true
			}
			continue
		}
		if !html && !escaped {
			// Nothing inside a string changes without HTML escapes: skip
			// to its closing quote (bytes.IndexByte is assembly in wasm,
			// where a byte loop in Go is what costs most).
			j := closingQuote(src, i)
			if j < 0 {
				break // not valid JSON: the rest is copied as it is
			}
			i, inString = j, false
			continue
		}
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inString = false
		case html && (c == '<' || c == '>' || c == '&'):
			if flush(run, i) || full() {
				return b
			}
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			run = i + 1
		case html && c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			if flush(run, i) || full() {
				return b
			}
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xf])
			i += 2
			run = i + 1
		}
	}
	flush(run, len(src))
	return b
}

// closingQuote is the index of the quote that closes the string src[i:]
// is inside of (i at or after its opening quote), or -1: the first quote
// not escaped, that is not preceded by an odd run of backslashes.
func closingQuote(src []byte, i int) int {
	for {
		j := bytes.IndexByte(src[i:], '"')
		if j < 0 {
			return -1
		}
		j += i
		k := j
		for k > i && src[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		i = j + 1
	}
}

const hexDigits = "0123456789abcdef"

// appendString appends s as abi.Marshal writes a string: as json.Marshal
// does, but with <, > and & left as they are.
func appendString(b []byte, s string) []byte { return abi.AppendJSONString(b, s, false) }
