package canonical

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzDirect holds the one-pass writer to the tree's: on any input, the
// same bytes when both read it as well-formed, and both refusing it
// otherwise (or direct giving way past its budget).
func FuzzDirect(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2,{"d":null,"c":"x"}],"a":true}`,
		`{"id":1000,"title":"Spring","status":"PUBLISHED","updatedAt":"2026-11-20T10:00:00Z"}`,
		`["\ud83d\ude00","\ud83d",1e400,-0,1.0,1.50,12345678901234567]`,
		" {\n\t\"k\" : [ ] , \"k\" : { } } ",
		`{"a":1} "b":2`, `[1 2,,3`, `{"a":1,}`, `{"a"}`, `[}`, `{]`, `[tru]`, `{"a":nul}`,
		`{"\u0061":1,"a":2,"\n":"\/","a\"b":"c\"d"}`,
		`{"\ue000":1,"😀":2,"x":[12345678901234567,0.000001,1e21]}`,
		`{"z":{"y":{"x":1,"w":2},"v":[{"u":1,"t":2}]},"s":"é"}`,
		`{"q":1,"p":2,"o":3,"n":4,"m":5,"l":6,"k":7,"j":8,"i":9,"h":10,"g":11,"f":12,"e":13,"d":14,"c":15,"b":16,"a":17,"b":18}`,
		`"plain"`, `  12  `, `true`, ``, `{"a":"` + "\x01" + `"}`, "[\"\xff\"]", `"unterminated`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := new(canonParser)
		got, ok := d.direct(s, nil)
		tree := new(canonParser)
		parsed := tree.parse(s)
		if ok != parsed && !(parsed && d.budget < 0) {
			t.Fatalf("%q: direct %v, parse %v", s, ok, parsed)
		}
		if !ok {
			return
		}
		if want := tree.emit(nil); !bytes.Equal(got, want) {
			t.Fatalf("%q: direct %q, tree %q", s, got, want)
		}
	})
}

// TestDirectGivesWay: nested objects each out of order would have direct
// move their bytes again at each level; past its budget it gives way, and
// the tree writes them.
func TestDirectGivesWay(t *testing.T) {
	t.Parallel()
	s := deepObject(5000)
	if _, ok := new(canonParser).direct(s, nil); ok {
		t.Fatal("direct wrote 5,000 nested unordered objects")
	}
	want := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat(`,"b":0}`, 5000)
	if got := string(JSON(gjson.Parse(s))); got != want {
		t.Fatalf("JSON: %d bytes, want %d", len(got), len(want))
	}
}

// BenchmarkCanonicalRecords is a tool's response of 2 KB: 20 records whose
// keys are not in order.
func BenchmarkCanonicalRecords(b *testing.B) {
	var recs []string
	for i := 0; len(strings.Join(recs, ",")) < 1950; i++ {
		recs = append(recs, fmt.Sprintf(`{"id":%d,"title":"Spring launch article number %d","status":"PUBLISHED","updatedAt":"2026-11-2%dT10:00:00Z"}`, 1000+i, i, i%10))
	}
	v := gjson.Parse(`{"code":200,"msg":"ok","data":{"records":[` + strings.Join(recs, ",") + `]}}`)
	b.SetBytes(int64(len(v.Raw)))
	for b.Loop() {
		JSON(v)
	}
}
