package abi_test

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
)

func TestMarshal(t *testing.T) {
	t.Parallel()
	type doc struct {
		S   string          `json:"s"`
		Raw json.RawMessage `json:"raw"`
		N   json.Number     `json:"n"`
	}
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"html characters stay", doc{S: "<b>A&B</b>", Raw: json.RawMessage(`{"x":"<y>&"}`), N: "1"}, `{"s":"<b>A&B</b>","raw":{"x":"<y>&"},"n":1}`},
		{"raw escapes kept as sent", doc{S: "", Raw: json.RawMessage(`"\u003c"`), N: "9007199254740993"}, `{"s":"","raw":"\u003c","n":9007199254740993}`},
		{"raw compacted, order kept", doc{Raw: json.RawMessage(" { \"b\" : 1 , \"a\" : 1234567890123456789 } "), N: "0"}, `{"s":"","raw":{"b":1,"a":1234567890123456789},"n":0}`},
		{"line separators escaped as json.Marshal does", "\u2028<", `"\u2028<"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := abi.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := abi.Marshal(func() {}); err == nil {
		t.Error("a func marshalled without an error")
	}
}
