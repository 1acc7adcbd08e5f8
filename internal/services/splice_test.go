package services_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// parts builds splice parts by hand, as a guest that does not use the SDK
// would.
type parts []byte

func (p parts) lit(s string) parts {
	return append(binary.LittleEndian.AppendUint32(append(p, services.SpliceJSON), uint32(len(s))), s...)
}

func (p parts) val(path string) parts {
	return append(binary.LittleEndian.AppendUint32(append(p, services.SpliceValue), uint32(len(path))), path...)
}

func (p parts) leaves(path string, limit int) parts {
	p = binary.LittleEndian.AppendUint32(append(p, services.SpliceLeaves), uint32(limit))
	return append(binary.LittleEndian.AppendUint32(p, uint32(len(path))), path...)
}

// str is a string part of segments given as mode and text pairs.
func (p parts) str(limit int, segs ...string) parts {
	p = binary.LittleEndian.AppendUint32(append(p, services.SpliceString), uint32(limit))
	p = binary.LittleEndian.AppendUint32(p, uint32(len(segs)/2))
	for i := 0; i < len(segs); i += 2 {
		p = append(binary.LittleEndian.AppendUint32(append(p, segs[i][0]), uint32(len(segs[i+1]))), segs[i+1]...)
	}
	return p
}

// manySegments is n text segments of one byte each.
func manySegments(n int) []string {
	segs := make([]string, 0, 2*n)
	for range n {
		segs = append(segs, "t", "a")
	}
	return segs
}

func (p parts) end() parts { return append(p, services.SpliceEnd) }

// reader answers the splice's paths on one request, as the native runner.
type reader struct{ m services.Members }

func newReader(req string) *reader {
	r := &reader{}
	r.m.Reset([]byte(req))
	return r
}

func (r *reader) Query(path string) (gjson.Result, error) { return r.m.Query(path) }
func (r *reader) Canonical(v gjson.Result) []byte         { return services.Canonical(v) }

func splice(req string, p parts, room int) ([]string, []string, error) {
	var out, skels []string
	err := services.Splice(p, newReader(req), room, func(_ int, s services.Spliced) {
		out = append(out, string(s.Payload))
		skels = append(skels, string(s.Skeleton))
	})
	return out, skels, err
}

const spliceReq = `{"tool":"t","args":{"b":2, "a":"x y","n":12345678901234567890.50},"response":{ "code" : 0 , "rows" : [ {"id":1,"name":"é\u00e9 <&>"} , {"id":1,"name":"长"} ] },"dup":{"a":1,"a":2},"s":"` +
	"\u2028\\\"q" + `"}`

func TestSplice(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("长", 100)
	tests := []struct {
		name   string
		parts  parts
		room   int
		want   []string
		skels  []string
		err    error
		detail string
	}{
		{"values compacted, exact", parts{}.lit(`{"r":`).val("response").lit(`,"n":`).val("args.n").lit(`}`), -1,
			[]string{`{"r":{"code":0,"rows":[{"id":1,"name":"é\u00e9 <&>"},{"id":1,"name":"长"}]},"n":12345678901234567890.50}`},
			[]string{`{"r":null,"n":null}`}, nil, ""},
		{"missing value is null", parts{}.lit(`[`).val("nothing").lit(`]`), -1, []string{`[null]`}, []string{`[null]`}, nil, ""},
		{"string of text and values, cut at a rune", parts{}.str(20, "t", "s ", "c", "args", "r", "response.rows.1"), -1,
			[]string{`"s {\"a\":\"x y\",\"b\":2,\"…"`}, []string{`null`}, nil, ""},
		{"string cut back to a rune's start", parts{}.str(4, "t", "ab长c"), -1, []string{`"ab…"`}, []string{`null`}, nil, ""},
		{"string uncut", parts{}.str(100, "r", "response.rows.1.name", "t", long[:6]), -1, []string{`"\"长\"长长"`}, []string{`null`}, nil, ""},
		{"string escapes as abi.Marshal", parts{}.str(100, "r", "s"), -1, []string{`"\"\u2028\\\"q\""`}, []string{`null`}, nil, ""},
		{"leaves", parts{}.leaves("response.rows", 10), -1, []string{`["1","éé <&>","长"]`}, []string{`null`}, nil, ""},
		{"leaves limited", parts{}.leaves("response.rows", 2), -1, []string{`["1","éé <&>"]`}, []string{`null`}, nil, ""},
		{"payloads", parts{}.lit(`1`).end().lit(`{"a":`).val("tool").lit(`}`).end().lit(`[]`), -1,
			[]string{`1`, `{"a":"t"}`, `[]`}, []string{`1`, `{"a":null}`, `[]`}, nil, ""},
		{"a trailing end starts none", parts{}.lit(`1`).end(), -1, []string{`1`}, []string{`1`}, nil, ""},
		{"no parts", parts{}, -1, []string{``}, []string{``}, nil, ""},
		{"value with a key twice", parts{}.val("dup"), -1, nil, nil, services.ErrSpliceJSON, "a value copied in"},
		{"value inside a string", parts{}.lit(`"a`).val("tool").lit(`"`), -1, nil, nil, services.ErrSpliceJSON, "a value inside a string"},
		{"value after an escaped quote", parts{}.lit(`["a\"`).str(5, "t", "x").lit(`"]`), -1, nil, nil, services.ErrSpliceJSON, "inside a string"},
		{"value after a closed string", parts{}.lit(`["a\\",`).val("tool").lit(`]`), -1, []string{`["a\\","t"]`}, []string{`["a\\",null]`}, nil, ""},
		{"over the room", parts{}.lit(`[`).val("response").lit(`]`), 40, nil, nil, services.ErrSpliceTooLarge, "more than 40 bytes"},
		{"string over the room", parts{}.str(1<<20, "c", "response", "c", "response"), 60, nil, nil, services.ErrSpliceTooLarge, ""},
		{"unknown tag", parts{}.lit(`1`).end().end().append('?'), -1, nil, nil, services.ErrSplice, "unknown part '?' at byte 8"},
		{"unknown segment", parts{}.str(5, "x", "a"), -1, nil, nil, services.ErrSplice, "unknown segment 'x'"},
		{"cut length", parts{'j', 1, 0}, -1, nil, nil, services.ErrSplice, "part cut at byte 1"},
		{"length past the end", parts{'j', 9, 0, 0, 0, '1'}, -1, nil, nil, services.ErrSplice, "a part of 9 bytes past the end"},
		{"segment past the end", parts{'s', 5, 0, 0, 0, 1, 0, 0, 0}, -1, nil, nil, services.ErrSplice, "segment past the end"},
		{"path refused", parts{}.val(strings.Repeat("a", 513)), -1, nil, nil, services.ErrPath, "513 bytes"},
		{"too many payloads", parts(strings.Repeat("e", services.MaxSplicePayloads+1)), -1, nil, nil, services.ErrSplice, "more than 10000 payloads"},
		{"too many segments", parts{}.str(5, manySegments(services.MaxSpliceParts)...), -1, nil, nil, services.ErrSplice, "more than 65536 parts"},
		{"a segment after the cut is not read", parts{}.str(2, "t", "abc", "r", strings.Repeat("a", 513)), -1, []string{`"ab…"`}, []string{`null`}, nil, ""},
		{"too many parts", parts{}.lit("").append([]byte(strings.Repeat("\x6a\x00\x00\x00\x00", services.MaxSpliceParts))...), -1, nil, nil, services.ErrSplice, "more than 65536 parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, skels, err := splice(spliceReq, tt.parts, tt.room)
			if !errors.Is(err, tt.err) || err != nil && !strings.Contains(err.Error(), tt.detail) {
				t.Fatalf("error %v, want %v (%s)", err, tt.err, tt.detail)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") || strings.Join(skels, "\n") != strings.Join(tt.skels, "\n") {
				t.Fatalf("payloads %q skeletons %q\nwant %q %q", got, skels, tt.want, tt.skels)
			}
		})
	}
}

func (p parts) append(b ...byte) parts { return append(p, b...) }

// FuzzSplice holds the splice to the rule the recorder relies on: whatever
// the parts, a payload whose skeleton is valid JSON with every key once is
// itself valid JSON with every key once, and it is never over the room.
func FuzzSplice(f *testing.F) {
	f.Add([]byte(parts{}.lit(`{"r":`).val("response").lit(`}`)), 1<<20)
	f.Add([]byte(parts{}.lit(`["a\`).val("tool").lit(`"]`)), 1<<20)
	f.Add([]byte(parts{}.lit(`{"`).str(10, "t", "x").lit(`":1}`)), 100)
	f.Add([]byte(parts{}.lit(`[1`).leaves("response", 3).lit(`]`).end().lit(`{}`)), 1<<20)
	f.Fuzz(func(t *testing.T, p []byte, room int) {
		room = max(room%(1<<20), -1)
		total := 0
		err := services.Splice(p, newReader(spliceReq), room, func(_ int, s services.Spliced) {
			total += len(s.Payload)
			if len(s.Skeleton) > 0 && abi.DistinctJSON(s.Skeleton) && !abi.DistinctJSON(s.Payload) {
				t.Fatalf("skeleton %s passes, payload %s does not", s.Skeleton, s.Payload)
			}
			if len(s.Skeleton) == 0 && len(s.Payload) > 0 {
				t.Fatalf("payload %s without a skeleton", s.Payload)
			}
		})
		if err == nil && room >= 0 && total > room {
			t.Fatalf("%d bytes over a room of %d", total, room)
		}
	})
}
