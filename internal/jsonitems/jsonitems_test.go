package jsonitems

import (
	"fmt"
	"strings"
	"testing"
)

// TestScan checks what a scan lists, item by item and member by member,
// and that it gives way (false, the list emptied) where JSON's grammar
// does not allow a byte.
func TestScan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw   string
		limit int
		want  string // items as kind:raw:text, an object's members after it as key=kind:raw:text
	}{
		{`[{"id":1000,"t\u00e9":"x\ny","n":null,"ok":true,"tags":["a"],"m":{"x":1}},2.50,"s"]`, 10,
			`{:: id=#:1000:1000 té=s:"x\ny":x` + "\n" + `y n=n:null: ok=t:true:true tags=[:: m={:: | #:2.50:2.5 | s:"s":s`},
		{` {"a" : -0 , "a" : false} `[1:], 10, `{:: a=#:-0:-0 a=f:false:false`},
		{`[]`, 10, ``},
		{`[1,2,3]`, 2, `#:1:1 | #:2:2`},
		{`[1,2,x]`, 2, `#:1:1 | #:2:2`}, // stopped before what it would give way on
		{`[1,]`, 10, "gives way"},
		{`[01]`, 10, "gives way"},
		{`[{"a" 1}]`, 10, "gives way"},
		{`[{"a":[1,}]`, 10, "gives way"},
		{`[1]x`, 10, "gives way"},
		{`"s"`, 10, "gives way"},
		{`[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `]`, 10, "gives way"}, // deeper than a pass keeps
	} {
		var l List
		ok := l.Scan(c.raw, c.limit)
		got := "gives way"
		if ok {
			var items []string
			for i := range l.Len() {
				kind, raw, text := l.Item(i)
				s := fmt.Sprintf("%c:%s:%s", kind, raw, text)
				l.EachMember(i, func(key string, kind byte, raw, text string) {
					s += fmt.Sprintf(" %s=%c:%s:%s", key, kind, raw, text)
				})
				items = append(items, s)
			}
			got = strings.Join(items, " | ")
		} else if l.Len() != 0 {
			t.Errorf("%q: gave way with %d items kept", c.raw, l.Len())
		}
		if got != c.want {
			t.Errorf("%q limit %d:\n got %q\nwant %q", c.raw, c.limit, got, c.want)
		}
	}
}
