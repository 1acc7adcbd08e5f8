package abi

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzHasDuplicateKey: on valid JSON the fast scan and the token walk agree.
func FuzzHasDuplicateKey(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":{"a":2}}`, `{"a":1,"a":2}`, `[{"x":[]},{"x":{},"x":1}]`, `{"\u0061":1,"a":2}`, `{"a\"":1,"a\\":2}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k3":7}`,
		` "s" `, `12.5e3`, `{"a":[1,2,{"b":true}],"c":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		fast := hasDuplicateKey(in)
		slow := walkStrict(in, nil) != nil
		if fast != slow {
			t.Fatalf("hasDuplicateKey(%q) = %v, walkStrict says %v", in, fast, slow)
		}
	})
}

func TestHasDuplicateKeyLargeObject(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	b.WriteString(`"last":{"k":1}}`)
	if hasDuplicateKey([]byte(b.String())) {
		t.Fatal("100 distinct keys reported as a duplicate")
	}
	dup := strings.Replace(b.String(), `"last"`, `"kxxxxx"`, 1)
	if !hasDuplicateKey([]byte(dup)) {
		t.Fatal("a duplicate after 100 keys was missed")
	}
}

func BenchmarkDuplicateKeys(b *testing.B) {
	d := []byte(`{"items":[` + strings.Repeat(`{"id":"abcdefgh","n":12345,"ok":true},`, 25) + `{}]}`)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			_ = hasDuplicateKey(d)
		}
	})
	b.Run("onepass", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			_, _, _ = scanJSON(d)
		}
	})
	b.Run("valid", func(b *testing.B) {
		b.SetBytes(int64(len(d)))
		for b.Loop() {
			_ = json.Valid(d)
		}
	})
}

// FuzzScanJSON: the one-pass scan judges validity exactly as json.Valid,
// duplicate keys exactly as hasDuplicateKey on valid JSON, and objects as
// json.Unmarshal into a map does.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":{"a":2}}`, `{"a":1,"a":2}`, `[{"x":[]},{"x":{},"x":1}]`, `{"\u0061":1,"a":2}`, `{"a\"":1,"a\\":2}`,
		` "s" `, `12.5e3`, `-0.1E+2`, `01`, `1.`, `1e`, `-`, `{"a":[1,2,{"b":true}],"c":null}`, `null`, `nul`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `"\x"`, `"\u12g4"`, "\"\x01\"", "\"\xff\"", `{}x`, ``, ` `, `[`, `{"a":{"b":[]}}  `, `{"a":1 "b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		valid, dup, object := scanJSON(in)
		if want := json.Valid(in); valid != want {
			t.Fatalf("scanJSON(%q) valid = %v, json.Valid %v", in, valid, want)
		}
		if !valid {
			return
		}
		if want := hasDuplicateKey(in); dup != want {
			t.Fatalf("scanJSON(%q) dup = %v, hasDuplicateKey %v", in, dup, want)
		}
		var obj map[string]json.RawMessage
		if want := json.Unmarshal(in, &obj) == nil && obj != nil; object != want {
			t.Fatalf("scanJSON(%q) object = %v, json.Unmarshal into a map %v", in, object, want)
		}
	})
}

func TestScanJSONDepth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			doc := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
			if valid, _, _ := scanJSON(doc); valid != json.Valid(doc) || valid != (n <= maxDepth) {
				t.Errorf("depth %d of %s: scanJSON valid %v, json.Valid %v", n, open, valid, json.Valid(doc))
			}
		}
	}
}
