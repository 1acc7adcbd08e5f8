package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
)

type strictInner struct {
	Code string `json:"code"`
	Kind string `json:"kind,omitempty"`
}

type strictEmbedded struct {
	Trace string `json:"trace"`
}

type strictDoc struct {
	strictEmbedded
	Name    string                     `json:"name"`
	Count   int                        `json:"count,omitempty"`
	Skip    string                     `json:"-"`
	Plain   string                     // no tag: the field's name is the key
	Inner   *strictInner               `json:"inner"`
	List    []strictInner              `json:"list"`
	Map     map[string]strictInner     `json:"map"`
	Raw     json.RawMessage            `json:"raw"`
	Any     any                        `json:"any"`
	Outcome abi.Outcome                `json:"outcome"`
	Grid    [][]map[string]json.Number `json:"grid"`
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		err  error
		msg  string
	}{
		{"every field", `{"trace":"t","name":"n","count":1,"Plain":"p","inner":{"code":"c"},"list":[{"code":"a"}],"map":{"k":{"code":"b"}},` +
			`"raw":{"x":1},"any":[{"y":2}],"outcome":"REJECTED","grid":[[{"z":3}]]}`, nil, ""},
		{"whitespace after", " {\"name\":\"n\"} \n", nil, ""},
		{"key twice", `{"name":"a","name":"b"}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "name" in $`},
		{"escaped key twice", `{"name":"a","n\u0061me":"b"}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "name" in $`},
		{"key in upper case", `{"Name":"a"}`, abi.ErrKeyCase, `abi: strict json: key in the wrong case: "Name" in $ must be spelled "name"`},
		{"untagged key in lower case", `{"plain":"a"}`, abi.ErrKeyCase, `abi: strict json: key in the wrong case: "plain" in $ must be spelled "Plain"`},
		{"Kelvin sign folds to k", `{"list":[{"\u212aind":"a"}]}`, abi.ErrKeyCase, "abi: strict json: key in the wrong case: \"\u212aind\" in $.list[0] must be spelled \"kind\""},
		{"long s", `{"inner":{"code":"a"},"map":{"k":{"codeſ":1}}}`, abi.ErrUnknownKey, `abi: strict json: unknown key "codeſ" in $.map.k`},
		{"case inside a list", `{"list":[{"code":"a"},{"CODE":"b"}]}`, abi.ErrKeyCase, `abi: strict json: key in the wrong case: "CODE" in $.list[1] must be spelled "code"`},
		{"embedded field case", `{"Trace":"t"}`, abi.ErrKeyCase, `abi: strict json: key in the wrong case: "Trace" in $ must be spelled "trace"`},
		{"ignored field", `{"Skip":"x"}`, abi.ErrUnknownKey, `abi: strict json: unknown key "Skip" in $`},
		{"unknown key", `{"inner":{"code":"c","extra":1}}`, abi.ErrUnknownKey, `abi: strict json: unknown key "extra" in $.inner`},
		{"map key twice", `{"map":{"k":{},"k":{}}}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "k" in $.map`},
		{"map keys differ in case", `{"map":{"k":{},"K":{}}}`, nil, ""},
		{"raw key twice", `{"raw":{"a":[{"b":1,"b":2}]}}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "b" in $.raw.a[0]`},
		{"any key twice", `{"any":{"x":{"y":1,"y":1}}}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "y" in $.any.x`},
		{"grid key twice", `{"grid":[[],[{"z":1},{"z":1,"z":2}]]}`, abi.ErrDuplicateKey, `abi: strict json: duplicate key "z" in $.grid[1][1]`},
		{"raw keys free of case", `{"raw":{"A":1,"a":2}}`, nil, ""},
		{"trailing object", `{"name":"a"}{}`, nil, "abi: strict json: trailing data"},
		{"trailing brace", `{"name":"a"}}`, nil, "abi: strict json: trailing data"},
		{"truncated", `{"name":"a"`, nil, "abi: strict json: unexpected EOF"},
		{"empty", ``, nil, "abi: strict json: unexpected EOF"},
		{"not JSON", `{"name":tru}`, nil, "abi: strict json: invalid character '}' in literal true (expecting 'e')"},
		{"wrong type", `{"count":"1"}`, nil, "abi: strict json: json: cannot unmarshal string into Go struct field strictDoc.count of type int"},
		{"bad outcome", `{"outcome":"MAYBE"}`, abi.ErrUnknownOutcome, `abi: strict json: abi: outcome "MAYBE": unknown outcome`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got strictDoc
			err := abi.DecodeStrict([]byte(tt.in), &got)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("DecodeStrict(%s) = %v", tt.in, err)
				}
				var want strictDoc
				if err := json.Unmarshal([]byte(tt.in), &want); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("DecodeStrict = %+v, json.Unmarshal = %+v, %v", got, want, err)
				}
				return
			}
			if err == nil || err.Error() != tt.msg {
				t.Fatalf("DecodeStrict(%s) error =\n%v\nwant\n%s", tt.in, err, tt.msg)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("error %v does not wrap %v", err, tt.err)
			}
		})
	}
}

func TestDecodeStrictTarget(t *testing.T) {
	t.Parallel()
	var m map[string]int
	if err := abi.DecodeStrict([]byte(`{"a":1}`), m); err == nil || err.Error() != "abi: strict json: decode into map[string]int: not a non-nil pointer" {
		t.Fatalf("non-pointer: %v", err)
	}
	if err := abi.DecodeStrict([]byte(`{"a":1,"A":2}`), &m); err != nil || m["a"] != 1 || m["A"] != 2 {
		t.Fatalf("map: %v, %v", m, err)
	}
	var facts []abi.Fact
	err := abi.DecodeStrict([]byte(`[{"path":"a","source":"user"},{"path":"b","Source":"tool"}]`), &facts)
	if err == nil || err.Error() != `abi: strict json: key in the wrong case: "Source" in $[1] must be spelled "source"` {
		t.Fatalf("facts: %v", err)
	}
}

func TestCheckDuplicateKeys(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":{"b":[1,{"c":1,"d":2}]},"A":1}`: "",
		`[1,"a",null,true,{}]`:                "",
		`{"a":{"b":[1,{"c":1,"c":2}]}}`:       `abi: strict json: duplicate key "c" in $.a.b[1]`,
		`{"a":1} x`:                           "abi: strict json: trailing data",
		`{"a":`:                               "abi: strict json: unexpected EOF",
	} {
		err := abi.CheckDuplicateKeys([]byte(in))
		if got := errString(err); got != want {
			t.Errorf("CheckDuplicateKeys(%s) = %q, want %q", in, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzDecodeStrict: whatever DecodeStrict accepts, json.Unmarshal reads the
// same way.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"name":"a","list":[{"code":"x"}]}`, `{"name":"a","name":"b"}`, `{"Name":"a"}`, `{"raw":{"a":1,"a":2}}`, `{"map":{"k":{"code":"c"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got strictDoc
		if abi.DecodeStrict(in, &got) != nil {
			return
		}
		var want strictDoc
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("DecodeStrict accepted %q, json.Unmarshal: %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeStrict = %+v, json.Unmarshal = %+v for %q", got, want, in)
		}
		if abi.CheckDuplicateKeys(in) != nil {
			t.Fatalf("DecodeStrict accepted %q with a duplicate key", in)
		}
	})
}
