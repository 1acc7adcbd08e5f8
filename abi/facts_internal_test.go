package abi

import (
	"reflect"
	"testing"
)

// TestDecodeFactsAsStrict: the fast path decodes every form it takes as
// decodeStrict does, and leaves every other form to it.
func TestDecodeFactsAsStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data  string
		plain bool
	}{
		{`[]`, true},
		{` [ {"path":"a","source":"USER"} , {"source":"EVIDENCE","path":"b.c","detail":"ev_1"} ] `, true},
		{`[{}]`, true},
		{`[{"path":"市场部","source":"USER"}]`, true},
		{`null`, false},
		{`[{"path":"a\u0041","source":"USER"}]`, false},
		{`[{"path":"a","Source":"USER"}]`, false},
		{`[{"path":"a","source":"USER","source":"TOOL"}]`, false},
		{`[{"path":"a","trusted":true}]`, false},
		{`[{"path":1}]`, false},
		{`[null]`, false},
		{`{"path":"a"}`, false},
		{`[{"path":"a"}`, false},
		{"[{\"path\":\"\xff\"}]", false},
	}
	for _, tt := range tests {
		fs, ok := plainFacts([]byte(tt.data))
		if ok != tt.plain {
			t.Fatalf("%s: plain %v, want %v", tt.data, ok, tt.plain)
		}
		var want []Fact
		werr := decodeStrict([]byte(tt.data), &want)
		got, gerr := decodeFacts([]byte(tt.data))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %#v %v, decodeStrict %#v %v", tt.data, got, gerr, want, werr)
		}
		if ok && !reflect.DeepEqual(fs, want) {
			t.Fatalf("%s: fast path %#v, decodeStrict %#v", tt.data, fs, want)
		}
	}
}

func FuzzDecodeFacts(f *testing.F) {
	for _, s := range []string{`[]`, `[{"path":"a","source":"USER"}]`, `[{"path":"a","Source":"x"}]`, `[{}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		fs, ok := plainFacts([]byte(data))
		if !ok {
			return
		}
		var want []Fact
		if err := decodeStrict([]byte(data), &want); err != nil || !reflect.DeepEqual(fs, want) {
			t.Fatalf("%q: fast path %#v, decodeStrict %#v %v", data, fs, want, err)
		}
	})
}
