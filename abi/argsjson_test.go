package abi_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
)

// Every ARG_JSON_INVALID detail says what is wrong: empty arguments as
// such, a syntax error with its place (in characters) and the text there.
func TestArgsJSONDetail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		l          abi.Locale
		want       string
	}{
		{"empty", "", abi.LocaleEN, "the arguments are empty; a JSON object is expected ({} when there is nothing to pass)"},
		{"whitespace, zh", " \n\t", abi.LocaleZH, "参数为空，应为 JSON 对象（没有参数时写 {}）"},
		{"cut short", `{"q":"市场`, abi.LocaleEN, `line 1, column 9: unexpected end of JSON input; the arguments there read: {"q":"市场`},
		{"second line, zh", "{\"a\":1,\n\"b\" 2}", abi.LocaleZH, `第 2 行第 5 列：invalid character '2' after object key；该处参数原文：{"a":1,\n"b" 2}`},
		{"two values", `{} {}`, abi.LocaleEN, `line 1, column 4: invalid character '{' after top-level value; the arguments there read: {} {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := abi.ArgsJSONDetail(tt.l, tt.text); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// FuzzSyntaxOf: any text gives a bounded, valid excerpt and a place inside
// the text (a line break is written as two characters, \\n).
func FuzzSyntaxOf(f *testing.F) {
	for _, s := range []string{"", " ", `{"a":`, "{\n x}", `"\xff`, strings.Repeat("好", 200) + "{", `{"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s := abi.SyntaxOf(text)
		if s.Empty != (strings.TrimSpace(text) == "") {
			t.Fatalf("Empty = %v for %q", s.Empty, text)
		}
		if s.Empty || s.Message == "" {
			return
		}
		if len(s.Excerpt) > 2*abi.ExcerptBytes+2*len("…") || !utf8.ValidString(s.Excerpt) {
			t.Fatalf("excerpt %q", s.Excerpt)
		}
		if s.Line < 1 || s.Column < 1 || s.Line > strings.Count(text, "\n")+1 {
			t.Fatalf("place %d:%d in %q", s.Line, s.Column, text)
		}
		if abi.ArgsJSONDetail(abi.LocaleEN, text) == "" {
			t.Fatal("empty detail")
		}
	})
}
