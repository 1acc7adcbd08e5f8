package services

import (
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
)

// Canonical returns a JSON value in canonical form: object keys sorted
// (later duplicates win), no insignificant whitespace, strings re-encoded,
// numbers as written. A missing value is "null".
func Canonical(v gjson.Result) []byte {
	return appendCanonical(nil, v)
}

func appendCanonical(out []byte, v gjson.Result) []byte {
	switch {
	case !v.Exists():
		return append(out, "null"...)
	case v.IsObject():
		type kv struct {
			k string
			v gjson.Result
		}
		var fields []kv
		idx := map[string]int{}
		v.ForEach(func(k, val gjson.Result) bool {
			if i, ok := idx[k.Str]; ok {
				fields[i].v = val
				return true
			}
			idx[k.Str] = len(fields)
			fields = append(fields, kv{k.Str, val})
			return true
		})
		sort.Slice(fields, func(i, j int) bool { return fields[i].k < fields[j].k })
		out = append(out, '{')
		for i, f := range fields {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendQuote(out, f.k)
			out = append(out, ':')
			out = appendCanonical(out, f.v)
		}
		return append(out, '}')
	case v.IsArray():
		out = append(out, '[')
		i := 0
		v.ForEach(func(_, val gjson.Result) bool {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendCanonical(out, val)
			i++
			return true
		})
		return append(out, ']')
	case v.Type == gjson.String:
		return strconv.AppendQuote(out, v.Str)
	default:
		return append(out, v.Raw...)
	}
}
