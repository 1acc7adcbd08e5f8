package loop

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// ToolMessageInput is what the tool message of one observation is built
// from.
type ToolMessageInput struct {
	Observation abi.Observation
	// Evidence is the item the Evidence guard registered for the call;
	// nil for a call without evidence (a builtin, a call that never ran).
	Evidence *abi.EvidenceItem
	// Response is the tool's whole response. When the Evidence guard cut
	// the observation's data to its size budget, the result is rendered
	// from Response instead, within Budget and on a JSON boundary.
	Response json.RawMessage
	// Budget bounds the result JSON of a success, in bytes; 0 leaves it
	// whole (a builtin's answer, which the builtin bounds itself:
	// builtin_evidence_get pages by pageSize). A failure's downstream body
	// always gets failureBudget.
	Budget int
	Locale abi.Locale
}

// failureBudget bounds the downstream body shown with a failure: enough for
// an error envelope and its message, never a whole payload.
const failureBudget = 1024

// ToolMessage is the role=tool content the model reads for an observation
// (TOOL_OBSERVATION §7.1; FAILURES_AND_EVIDENCE §1, §6).
//
// A success reads: the summary; the evidence id and how to cite it
// ([ev:<id>]); whether the result has data or is empty, as the evidence
// item judged it; then the result as one line of compact JSON within the
// budget. A result over the budget is cut on a JSON boundary (members and
// elements dropped from the end, a long string shortened), says
// truncated: true and how to read the whole with builtin_evidence_get. A
// base64 payload of an MCP image, audio or resource part is replaced by a
// placeholder naming its type, MIME type, size and evidence.
//
// A non-success reads "<reason>。下一步：<next>" (en: "<reason>. Next:
// <next>"), followed, when the tool answered, by its body (bounded): a
// failed read never looks like an empty result.
func ToolMessage(in ToolMessageInput) string {
	o, l := in.Observation, in.Locale
	if l == "" {
		l = o.Locale
	}
	ev := ""
	if in.Evidence != nil {
		ev = in.Evidence.ID
	}
	if o.Outcome != abi.OutcomeSuccess {
		msg := o.Message()
		if body := downstream(o.Data, ev, l); body != "" && !strings.Contains(msg, body) {
			msg += "\n" + textFor(l, txtMsgDownstream) + "\n" + body
		}
		return msg
	}
	data, text := o.Data, o.Text
	if cut, ok := guardCut(data); ok {
		text = withoutGuardNote(text)
		if len(in.Response) > 0 {
			data = in.Response
		} else {
			data = cut
		}
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(text, "。. "))
	if l == abi.LocaleEN {
		b.WriteString(".")
	} else {
		b.WriteString("。")
	}
	if ev != "" {
		b.WriteString("\n" + textFor(l, txtMsgEvidence, ev, ev))
	}
	kind := resultKind(in.Evidence, data)
	if ev != "" || len(data) > 0 {
		id := txtMsgWithData
		if kind == abi.ResultEmpty {
			id = txtMsgEmpty
		}
		b.WriteString("\n" + textFor(l, id))
	}
	if len(data) == 0 {
		return b.String()
	}
	budget := in.Budget
	shown := placeholders(compact(data), ev, l)
	out, truncated := shown, false
	if budget > 0 {
		out, truncated = cutJSON(shown, budget)
	}
	if truncated {
		if ev != "" {
			b.WriteString("\n" + textFor(l, txtMsgTruncated, strconv.Itoa(len(shown)), strconv.Itoa(budget), ev))
		} else {
			b.WriteString("\n" + textFor(l, txtMsgTruncatedNoEvidence, strconv.Itoa(len(shown)), strconv.Itoa(budget)))
		}
	}
	b.WriteString("\n")
	b.Write(out)
	return b.String()
}

// resultKind is the evidence item's result when there is one; without
// evidence, an absent or empty payload is empty, anything else has data.
func resultKind(it *abi.EvidenceItem, data json.RawMessage) string {
	if it != nil && it.Result != "" {
		return it.Result
	}
	switch strings.TrimSpace(string(data)) {
	case "", "null", "{}", "[]", `""`:
		return abi.ResultEmpty
	}
	return abi.ResultWithData
}

// downstream is a failure's body as the model reads it, bounded; "" for a
// failure without one.
func downstream(data json.RawMessage, ev string, l abi.Locale) string {
	if len(data) == 0 || !json.Valid(data) {
		return ""
	}
	if r := gjson.ParseBytes(data); r.Type == gjson.String {
		s := r.String()
		if len(s) > failureBudget {
			s = cutString(s, failureBudget) + "…"
		}
		return s
	}
	out, _ := cutJSON(placeholders(compact(data), ev, l), failureBudget)
	return string(out)
}

// guardCut recognises the data of an observation the Evidence guard cut to
// its size budget: {"truncated":true,"size","limit","evidenceId","head"}.
func guardCut(data json.RawMessage) (json.RawMessage, bool) {
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	r := gjson.ParseBytes(data)
	if !r.Get("truncated").Bool() || !r.Get("evidenceId").Exists() || r.Get("head").Type != gjson.String {
		return nil, false
	}
	return data, true
}

// The note the Evidence guard appends to the text of an observation it cut
// (internal/services evidenceTruncate). The tool message says itself what
// it shows, so the guard's byte counts, which would contradict it, go.
var guardNotes = []string{"返回内容共 ", "the response has "}

func withoutGuardNote(text string) string {
	for _, n := range guardNotes {
		if i := strings.LastIndex(text, n); i >= 0 {
			return strings.TrimRight(text[:i], "；; ")
		}
	}
	return text
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		s, _ := json.Marshal(string(b))
		return s
	}
	return buf.Bytes()
}

// placeholders replaces the base64 payloads of MCP content parts — "data"
// of an image or audio part, "blob" of a resource's contents — by a short
// text naming the part's type, MIME type, size and the evidence to read it
// from. Everything else is copied as it is, in order.
func placeholders(b []byte, ev string, l abi.Locale) []byte {
	if !bytes.Contains(b, []byte(`"data"`)) && !bytes.Contains(b, []byte(`"blob"`)) {
		return b
	}
	return appendPlaceheld(nil, gjson.ParseBytes(b), ev, l)
}

func appendPlaceheld(dst []byte, r gjson.Result, ev string, l abi.Locale) []byte {
	switch {
	case r.IsObject():
		kind := r.Get("type").String()
		binary := ""
		switch {
		case (kind == "image" || kind == "audio") && r.Get("data").Type == gjson.String:
			binary = "data"
		case r.Get("uri").Exists() && r.Get("blob").Type == gjson.String:
			binary, kind = "blob", "resource"
		}
		dst = append(dst, '{')
		first := true
		r.ForEach(func(k, v gjson.Result) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, k.Raw...)
			dst = append(dst, ':')
			if k.String() == binary {
				p := textFor(l, txtMsgBinary, kind, r.Get("mimeType").String(), strconv.Itoa(base64Size(v.String())), ev)
				q, _ := json.Marshal(p)
				dst = append(dst, q...)
				return true
			}
			dst = appendPlaceheld(dst, v, ev, l)
			return true
		})
		return append(dst, '}')
	case r.IsArray():
		dst = append(dst, '[')
		first := true
		r.ForEach(func(_, v gjson.Result) bool {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendPlaceheld(dst, v, ev, l)
			return true
		})
		return append(dst, ']')
	}
	return append(dst, r.Raw...)
}

// base64Size is the decoded size of a base64 text.
func base64Size(s string) int {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	return len(s) * 3 / 4
}

// cutJSON returns compact JSON b within budget bytes, cut on a JSON
// boundary: an object keeps its members in order up to the last that fits,
// and the first that does not fit whole is cut the same way; an array
// keeps the elements that fit whole (only a first element is ever cut); a
// string too long is shortened and ends with "…". truncated reports a cut. A
// value that cannot be cut to the budget at all becomes "…" as a string.
func cutJSON(b []byte, budget int) ([]byte, bool) {
	if len(b) <= budget {
		return b, false
	}
	out, ok := cutValue(nil, gjson.ParseBytes(b), budget)
	if !ok {
		return []byte(`"…"`), true
	}
	return out, true
}

// cutValue appends r within budget bytes; ok is false when not even a cut
// form of r fits.
func cutValue(dst []byte, r gjson.Result, budget int) ([]byte, bool) {
	if len(r.Raw) <= budget {
		return append(dst, r.Raw...), true
	}
	switch {
	case r.IsObject(), r.IsArray():
		open, end := byte('['), byte(']')
		if r.IsObject() {
			open, end = '{', '}'
		}
		if budget < 2 {
			return dst, false
		}
		start := len(dst)
		dst = append(dst, open)
		first := true
		r.ForEach(func(k, v gjson.Result) bool {
			// What is left for this member: the budget minus what is
			// written, the closing bracket and a comma.
			left := budget - (len(dst) - start) - 1
			var prefix []byte
			if !first {
				prefix = append(prefix, ',')
			}
			if r.IsObject() {
				prefix = append(prefix, k.Raw...)
				prefix = append(prefix, ':')
			}
			if len(prefix) >= left {
				return false
			}
			if len(v.Raw) <= left-len(prefix) {
				dst = append(dst, prefix...)
				dst = append(dst, v.Raw...)
				first = false
				return true
			}
			if !first && r.IsArray() {
				// A later element that does not fit whole is dropped: a
				// half record would read as a record without those fields.
				return false
			}
			if cut, ok := cutValue(nil, v, left-len(prefix)); ok {
				dst = append(dst, prefix...)
				dst = append(dst, cut...)
			}
			return false
		})
		return append(dst, end), true
	case r.Type == gjson.String:
		// The shortest cut string is `"…"`, 5 bytes.
		if budget < 5 {
			return dst, false
		}
		s := r.String()
		n := min(len(s), budget)
		for n >= 0 {
			q, _ := marshalString(cutString(s, n) + "…")
			if len(q) <= budget {
				return append(dst, q...), true
			}
			n -= max(1, (len(q)-budget)/2)
		}
		return dst, false
	}
	return dst, false
}

// cutString returns the longest prefix of s of at most n bytes that ends
// on a character boundary.
func cutString(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func marshalString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// evidenceOf returns the item of the first evidence.register effect, or nil.
func evidenceOf(effects []abi.Effect) *abi.EvidenceItem {
	for _, e := range effects {
		if e.Kind != abi.EffectEvidenceRegister {
			continue
		}
		var it abi.EvidenceItem
		if json.Unmarshal(e.Payload, &it) == nil && it.ID != "" {
			return &it
		}
	}
	return nil
}
