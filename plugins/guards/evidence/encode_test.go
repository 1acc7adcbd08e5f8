package evidence

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// tricky strings: escapes, HTML, the line separators, control bytes,
// invalid UTF-8.
var tricky = []string{"", "plain", `q"uo\te`, "<a href='x'>&amp;</a>", "line\u2028sep\u2029", "\b\f\n\r\t\x00\x1f\x7f",
	"中文，全角！", "bad \xff\xfe utf8", "\xe2\x80", "emoji 😀"}

func TestEncodeItem(t *testing.T) {
	t.Parallel()
	raws := []string{`{"a":1}`, ` { "b" : [ 1 , 2 ,{"c":"<x> & \u2028"} ] } `, `"s p a c e"`, `"e\"s\\c\"" `, "[\n\t\"\u2028\u2029 <&>\"\n]", `null`, `123.5e3`}
	var items []abi.EvidenceItem
	for i, s := range tricky {
		raw := raws[i%len(raws)]
		items = append(items, abi.EvidenceItem{ID: s, SourceType: "query", Locator: s + " " + raw, RetrievedAt: s, ToolCallID: s,
			Excerpt: s, ContentHash: s, Tool: s, NodeID: s, Status: abi.OutcomeSuccess, BusinessOK: i%2 == 0, Result: abi.ResultWithData,
			Empty: i%3 == 0, Truncated: i%2 == 1, Size: i * 7,
			Extracts: map[string]json.RawMessage{s: json.RawMessage(raw), "z" + s: json.RawMessage(raws[(i+1)%len(raws)]), "a": json.RawMessage(`[]`)},
			Counts:   map[string]int{s: i, "b": -1}, Values: []string{s, "v"}, Payload: json.RawMessage(raw)})
	}
	items = append(items, abi.EvidenceItem{ID: "ev_1", Status: abi.OutcomeFailed, Result: abi.ResultFailure},
		abi.EvidenceItem{ID: "ev_2", Status: abi.OutcomeSuccess, Extracts: map[string]json.RawMessage{}, Counts: map[string]int{}, Values: []string{}})
	for _, it := range items {
		want, err := abi.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendItem(nil, &it, false); !bytes.Equal(got, want) {
			t.Errorf("item %q:\ngot  %s\nwant %s", it.ID, got, want)
		}
		// Compact raw values are copied as they are, to the same bytes.
		compact := isCompact(it.Payload)
		for _, v := range it.Extracts {
			compact = compact && isCompact(v)
		}
		if got := appendItem(nil, &it, true); compact && !bytes.Equal(got, want) {
			t.Errorf("item %q with compact values:\ngot  %s\nwant %s", it.ID, got, want)
		}
	}
}

func TestEncodeEntity(t *testing.T) {
	t.Parallel()
	for i, s := range tricky {
		e := abi.Entity{Type: s, ID: s, Name: s, TaskID: s, Attrs: map[string]json.RawMessage{s: json.RawMessage(` {"x" : "<y>"} `), "n": json.RawMessage(`1`)}}
		if i%2 == 1 {
			e.Attrs = nil
		}
		want, err := abi.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntity(nil, &e, false); !bytes.Equal(got, want) {
			t.Errorf("entity %q:\ngot  %s\nwant %s", s, got, want)
		}
		e.Attrs = map[string]json.RawMessage{s: json.RawMessage(`{"x":"<y>"}`), "n": json.RawMessage(`1`)}
		want, err = abi.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntity(nil, &e, true); !bytes.Equal(got, want) {
			t.Errorf("entity %q with compact values:\ngot  %s\nwant %s", s, got, want)
		}
	}
}

func TestCompactExcerpt(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`{}`, ` { "a" : "x y" , "b":[ 1, 2 ] } `, `"` + strings.Repeat("中", 100) + `"`,
		`{"k":"` + strings.Repeat(`a\" `, 90) + `"}`, "[\n" + strings.Repeat(` {"id": 1, "t": "<b>"},`+"\n", 30) + "0]"} {
		var full bytes.Buffer
		if err := json.Compact(&full, []byte(src)); err != nil {
			t.Fatal(err)
		}
		if got := appendCompact(nil, []byte(src), false, -1); !bytes.Equal(got, full.Bytes()) {
			t.Errorf("compact %q = %q, want %q", src, got, full.Bytes())
		}
		want := contract.Truncate(full.Bytes(), Excerpt)
		if got := contract.Truncate(appendCompact(nil, []byte(src), false, Excerpt+1), Excerpt); got != want {
			t.Errorf("excerpt of %q = %q, want %q", src, got, want)
		}
	}
}

// isCompact reports whether raw is compact JSON (or empty).
func isCompact(raw []byte) bool {
	var b bytes.Buffer
	return len(raw) == 0 || json.Compact(&b, raw) == nil && bytes.Equal(b.Bytes(), raw)
}

// compactByByte is appendCompact as first written, one byte at a time: the
// reference the run-copying version must match.
func compactByByte(b, src []byte, html bool, limit int) []byte {
	start := len(b)
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		if limit >= 0 && len(b)-start >= limit {
			break
		}
		c := src[i]
		if !inString {
			switch c {
			case ' ', '\t', '\n', '\r':
				continue
			case '"':
				inString = true
			}
			b = append(b, c)
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
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			continue
		case html && c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xf])
			i += 2
			continue
		}
		b = append(b, c)
	}
	return b
}

// FuzzAppendCompact: copying runs gives the bytes of compacting byte by
// byte, at every limit, with and without HTML escapes.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{` { "a" : "x <y> & z" , "b":[ 1, 2 ] } `, `"line\u2028sep"`, "[\n 1,\t2 ]", `{"k":"a\" <"}`} {
		f.Add([]byte(s), 7, true)
	}
	f.Fuzz(func(t *testing.T, src []byte, limit int, html bool) {
		if !json.Valid(src) {
			return
		}
		limit = limit%(2*len(src)+8) - 1
		if got, want := appendCompact([]byte("p"), src, html, limit), compactByByte([]byte("p"), src, html, limit); !bytes.Equal(got, want) {
			t.Fatalf("appendCompact(%q, %v, %d) = %q, want %q", src, html, limit, got, want)
		}
	})
}
