package services

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		err  string // "" when allowed
	}{
		{"args.title", ""},
		{"args.@keys", ""},
		{"config.limits.@values|@reverse", ""},
		{"@this", ""},
		{"args.lines.#.goodsCode", ""},
		{`args.lines.#(qty>1)#.goodsCode`, ""},
		{`args.lines.#(name!="x")`, ""},
		{`args.lines.#(name!%"a*")`, ""},
		{`args.lines.#(name%"*@pretty!")`, ""}, // inside a quoted value
		{"args.user@example", ""},
		{`args.a\!b`, ""},
		{`args.x\@pretty`, ""},
		{"args.c?ild*", ""},
		{"a*.b*", ""},
		{"[args.a,args.b]", ""},
		{`{"t":tool,args}`, ""},
		{"args.@pretty", "services: path refused: modifier @pretty is not available"},
		{"args|@ugly", "services: path refused: modifier @ugly is not available"},
		{"@flatten:{\"deep\":true}", "services: path refused: modifier @flatten is not available"},
		{"args.@keys:1", "services: path refused: modifier @keys takes no arguments"},
		{"[args,@dig:x]", "services: path refused: modifier @dig is not available"},
		{"#( @pretty)", "services: path refused: modifier @pretty is not available"},
		{`!{}`, ""},
		{`!"x"`, ""},
		{`[args,!true]`, ""},
		{`!{"a":"[[[[[[[[[["}`, ""},
		{"!" + strings.Repeat("[", 1000) + "|@pretty", "services: path refused: 1009 bytes, the limit is 512"},
		{"!" + strings.Repeat("[", 100) + "|@this", "services: path refused: nested more than 8 levels"},
		{strings.Repeat("[", 9), "services: path refused: nested more than 8 levels"},
		{strings.Repeat("a|", 9) + "a", "services: path refused: more than 8 '|'"},
		{strings.Repeat("#.", 9), "services: path refused: more than 8 '#'"},
		{"[a,a,a,a,a,a]", "services: path refused: more than 5 selectors"},
		{`args.#(name%"*a*")`, "services: path refused: a pattern with 2 '*' (at most one)"},
		{"args.*a*", "services: path refused: a key pattern with more than one '*'"},
		{strings.Repeat("a", 513), "services: path refused: 513 bytes, the limit is 512"},
	}
	for _, tt := range tests {
		err := CheckPath(tt.path)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%.40q: refused: %v", tt.path, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err || !errors.Is(err, ErrPath)):
			t.Errorf("%.40q: got %v, want %s", tt.path, err, tt.err)
		}
	}
}

// TestQueryAllowed checks that what CheckPath lets through still answers
// as gjson does.
func TestQueryAllowed(t *testing.T) {
	t.Parallel()
	req := []byte(`{"args":{"b":2,"a":1,"user@x":"u","lines":[{"q":1},{"q":3}]}}`)
	for path, want := range map[string]string{
		"args.@keys":          `["b","a","user@x","lines"]`,
		"args.user@x":         `"u"`,
		"args.lines.#(q>1).q": `3`,
		"[args.a,args.b]":     `[1,2]`,
	} {
		r, err := Query(req, path)
		if err != nil || r.Raw != want {
			t.Errorf("%s = %s, %v; want %s", path, r.Raw, err, want)
		}
	}
}

func BenchmarkCheckPath(b *testing.B) {
	for _, p := range []string{"args.title", `contract.tools.create_site.inputSchema`, `args.lines.#(qty>1)#.goodsCode`} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if err := CheckPath(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
