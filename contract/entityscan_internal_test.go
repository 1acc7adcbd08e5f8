package contract

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzEntityScan holds the entity rule read in one pass (each) to the rule
// read through gjson's ForEach (eachGjson): the same entities, fields and
// order for any records and any WRITE arguments, well-formed or not.
func FuzzEntityScan(f *testing.F) {
	for _, s := range [][2]string{
		{`[{"id":1000,"title":"Spring","status":"PUBLISHED","tags":["a"],"meta":{"x":1}},{"id":"s2","title":"Docs"}]`, `{"spaceId":42,"title":"from args"}`},
		{`{"id":1.50,"title":"\u00e9t\u00e9","id":7}`, `{"owner":{"id":1},"note":null}`},
		{`[1,"x",null,true,{"id":""},{"id":null},{"id":[1]},{"title":"no id"}]`, ``},
		{` [ {"id" : -0 , "k\"ey" : "v\n"} ] `, `[1,2]`},
		{`[{"id":1,}]`, `{"a":1`}, {`[{"id":1}]x`, `{"a":1}x`}, {`{"id":tru}`, `{}`},
	} {
		f.Add(s[0], s[1], "id", "title", "item")
	}
	f.Fuzz(func(t *testing.T, records, args, id, name, scalar string) {
		e := &EntitySpec{Type: "t", ID: id, Name: name, Scalar: scalar}
		r, base := gjson.Parse(records), gjson.Parse(args)
		collect := func(each func(gjson.Result, gjson.Result, func(*EntityFields))) []string {
			var out []string
			each(r, base, func(f *EntityFields) {
				out = append(out, fmt.Sprintf("%q %q %q %q %q", f.Type, f.ID, f.IDJSON, f.Name, f.Attrs))
			})
			return out
		}
		if got, want := collect(e.each), collect(e.eachGjson); !reflect.DeepEqual(got, want) {
			t.Fatalf("records %q args %q: one pass %q, gjson %q", records, args, got, want)
		}
	})
}
