package services

import (
	"encoding/binary"

	"github.com/tidwall/gjson"
)

// MaxItems bounds the items one items answer lists.
const MaxItems = 10000

// Items is the items primitive: the members of each item of the JSON value
// at a gjson path of the request (after CheckPath, ErrPath otherwise) — an
// array's items, or the value itself when it is not an array —, so that a
// guest reading records field by field finds each field's key, kind and
// text without parsing the records itself:
//
//   - 1 byte: the value's kind (as Walk's; WalkMissing when the path
//     matches nothing);
//   - 4 bytes little-endian: n, the number of items that follow: at most
//     limit (capped at MaxItems), 0 when nothing matches;
//   - n items, each a value and, when the item is an object, 4 bytes m and
//     its m members in document order, each a key (4-byte length and the
//     key unescaped) and a value.
//
// A value is 1 byte of kind, its raw JSON text and its text, each a 4-byte
// length and that many bytes: raw as the request holds it and text as
// Walk's leaves (a string unescaped, an integer as written, another number
// in its shortest decimal form, true or false, null empty); both are empty
// for an array or an object (a member's nested value is not listed).
func Items(req []byte, path string, limit int) ([]byte, error) {
	v, err := Query(req, path)
	if err != nil {
		return nil, err
	}
	return ItemsValue(v, limit), nil
}

// ItemsValue is Items on a value already read.
func ItemsValue(v gjson.Result, limit int) []byte {
	limit = min(max(limit, 0), MaxItems)
	// an answer holds each scalar's raw text and text, and 13 bytes and a
	// key per member: about 2.1 times the value for records of short keys
	out := make([]byte, 5, 5+2*len(v.Raw)+len(v.Raw)/4)
	out[0] = walkKind(v)
	if !v.Exists() || limit == 0 {
		return out
	}
	if v.Type == gjson.JSON && (v.Raw[0] == '[' || v.Raw[0] == '{') {
		if o, ok := scanItems(out, v.Raw, limit); ok {
			return o
		}
	}
	return itemsGjson(out, v, limit)
}

// itemsGjson is ItemsValue through gjson's ForEach, after the answer's
// first 5 bytes in out: what scanItems gives way to on what is not JSON.
func itemsGjson(out []byte, v gjson.Result, limit int) []byte {
	n := 0
	item := func(it gjson.Result) bool {
		out = appendItemValue(out, it)
		if it.IsObject() {
			at := len(out)
			out = append(out, 0, 0, 0, 0)
			m := 0
			it.ForEach(func(k, x gjson.Result) bool {
				out = binary.LittleEndian.AppendUint32(out, uint32(len(k.Str)))
				out = append(out, k.Str...)
				out = appendItemValue(out, x)
				m++
				return true
			})
			binary.LittleEndian.PutUint32(out[at:], uint32(m))
		}
		n++
		return n < limit
	}
	if v.IsArray() {
		v.ForEach(func(_, it gjson.Result) bool { return item(it) })
	} else {
		item(v)
	}
	binary.LittleEndian.PutUint32(out[1:], uint32(n))
	return out
}

// appendItemValue appends one value of an items answer: kind, raw, text.
func appendItemValue(out []byte, v gjson.Result) []byte {
	kind := walkKind(v)
	var raw, text string
	switch kind {
	case WalkArray, WalkObject:
	case WalkNull:
		raw = v.Raw
	default:
		raw, text = v.Raw, v.String()
	}
	return appendListed(out, kind, raw, text)
}
