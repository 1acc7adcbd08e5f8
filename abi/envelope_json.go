package abi

import (
	"encoding/json"
	"sort"
	"unicode/utf8"
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

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires and
// replacing invalid UTF-8, like encoding/json (HTML characters are not
// escaped).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
