package abi

import (
	"encoding/json"
	"sort"
)

// AppendJSON appends the request's JSON encoding to dst. The raw JSON
// fields (args, bound, contract, schemas, config, state views, response)
// are copied verbatim: whoever fills them is responsible for their being
// valid JSON, which the host's producers guarantee. It exists because
// encoding/json re-scans every raw field to compact it, and a request's
// state views are the bulk of its bytes; it produces the same document as
// json.Marshal for valid raw fields, without the re-scan.
func (r *Request) AppendJSON(dst []byte) []byte {
	// Small fields first: a guest's path lookups stop at the first match, so
	// the large ones (arguments, state views, the response) come last.
	dst = append(dst, `{"abi":`...)
	dst = appendInt(dst, r.ABI)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, string(r.Kind))
	if r.Phase != "" {
		dst = append(dst, `,"phase":`...)
		dst = appendString(dst, string(r.Phase))
	}
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, r.Tool)
	if r.CallID != "" {
		dst = append(dst, `,"callId":`...)
		dst = appendString(dst, r.CallID)
	}
	if r.Locale != "" {
		dst = append(dst, `,"locale":`...)
		dst = appendString(dst, string(r.Locale))
	}
	if len(r.Provenance) > 0 {
		dst = append(dst, `,"provenance":{`...)
		keys := make([]string, 0, len(r.Provenance))
		for k := range r.Provenance {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, r.Provenance[k])
		}
		dst = append(dst, '}')
	}
	dst = appendRaw(dst, "config", r.Config)
	if r.Result != nil && r.Result.Outcome.Valid() {
		dst = append(dst, `,"result":`...)
		dst = r.Result.AppendJSON(dst)
	}
	dst = appendRaw(dst, "contract", r.Contract)
	dst = appendRaw(dst, "schema", r.Schema)
	dst = appendRaw(dst, "outputSchema", r.OutputSchema)
	dst = appendRaw(dst, "bound", r.Bound)
	dst = appendRaw(dst, "args", r.Args)
	if r.ArgsText != "" {
		dst = append(dst, `,"argsText":`...)
		dst = appendString(dst, r.ArgsText)
	}
	if len(r.State) > 0 {
		dst = append(dst, `,"state":{`...)
		keys := make([]string, 0, len(r.State))
		for k := range r.State {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := 0
		for _, k := range keys {
			if len(r.State[k]) == 0 {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = append(dst, r.State[k]...)
		}
		dst = append(dst, '}')
	}
	dst = appendRaw(dst, "response", r.Response)
	return append(dst, '}')
}

func appendRaw(dst []byte, key string, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return append(dst, raw...)
}

func appendInt(dst []byte, n int) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// appendString appends s as a JSON string with HTML characters left as
// they are (see AppendJSONString).
func appendString(dst []byte, s string) []byte { return AppendJSONString(dst, s, false) }
