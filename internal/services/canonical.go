package services

import (
	"sort"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
)

// Canonical returns a JSON value in canonical form: object keys sorted
// (later duplicates win), no insignificant whitespace, strings re-encoded,
// numbers as written. A missing value is "null".
func Canonical(v gjson.Result) []byte {
	return appendCanonical(make([]byte, 0, len(v.Raw)+16), v)
}

type member struct {
	k string
	v gjson.Result
}

// members recycles the per-object key lists of appendCanonical.
var members = sync.Pool{New: func() any { s := make([]member, 0, 16); return &s }}

func appendCanonical(out []byte, v gjson.Result) []byte {
	switch {
	case !v.Exists():
		return append(out, "null"...)
	case v.IsObject():
		p := members.Get().(*[]member)
		defer func() {
			clear(*p)
			members.Put(p)
		}()
		fields := (*p)[:0]
		v.ForEach(func(k, val gjson.Result) bool {
			fields = append(fields, member{k.Str, val})
			return true
		})
		*p = fields
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
