package canonical

import (
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
)

// referenceCanonical is the canonical form before RFC 8785's (strings
// quoted by Go's strconv, numbers as written, keys in UTF-8 byte order),
// recursive with gjson's ForEach: FuzzCanonical compares JSON against it on
// the inputs where it was already right.
func referenceCanonical(v gjson.Result) []byte {
	return referenceAppend(make([]byte, 0, len(v.Raw)+16), v)
}

type member struct {
	k string
	v gjson.Result
}

func referenceAppend(out []byte, v gjson.Result) []byte {
	switch {
	case !v.Exists():
		return append(out, "null"...)
	case v.IsObject():
		var fields []member
		v.ForEach(func(k, val gjson.Result) bool {
			fields = append(fields, member{k.Str, val})
			return true
		})
		// Sort by key, later duplicates after earlier ones, and keep the last.
		sort.SliceStable(fields, func(i, j int) bool { return fields[i].k < fields[j].k })
		out = append(out, '{')
		first := true
		for i, f := range fields {
			if i+1 < len(fields) && fields[i+1].k == f.k {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = strconv.AppendQuote(out, f.k)
			out = append(out, ':')
			out = referenceAppend(out, f.v)
		}
		return append(out, '}')
	case v.IsArray():
		out = append(out, '[')
		i := 0
		v.ForEach(func(_, val gjson.Result) bool {
			if i > 0 {
				out = append(out, ',')
			}
			out = referenceAppend(out, val)
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
