package contract

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// numberGrammar is the JSON number grammar isNumber implements by hand.
var numberGrammar = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FuzzNumber: isNumber is the grammar, and the integer fast path of EQ
// agrees with big.Rat.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "200", "007", "1.5", "-1e3", "1E+2", "1.", ".5", "-", "", " 12 ", "123456789012345678", "1234567890123456789", "+1", "1e"} {
		f.Add(s, "200")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := isNumber(a), numberGrammar.MatchString(a); got != want {
			t.Fatalf("isNumber(%q) = %v, grammar %v", a, got, want)
		}
		ga, gb := gjson.Result{Type: gjson.String, Str: a}, gjson.Result{Type: gjson.String, Str: b}
		x, ok1 := smallInt(ga)
		y, ok2 := smallInt(gb)
		if !ok1 || !ok2 {
			return
		}
		ra, okA := numeric(ga)
		rb, okB := numeric(gb)
		if !okA || !okB {
			t.Fatalf("smallInt read %q, %q that numeric refuses", a, b)
		}
		if (x == y) != (ra.Cmp(rb) == 0) || big.NewRat(x, 1).Cmp(ra) != 0 {
			t.Fatalf("smallInt %q=%d, %q=%d disagree with big.Rat %v %v", a, x, b, y, ra, rb)
		}
	})
}

// TestEntitiesManyFields: an item with more fields than are searched in
// order reads as the map it replaced did (a later key wins, first order).
func TestEntitiesManyFields(t *testing.T) {
	t.Parallel()
	var kv []string
	for i := range 2 * linearFields {
		kv = append(kv, fmt.Sprintf(`"f%d":%d`, i, i))
	}
	kv = append(kv, `"f3":"again"`, `"id":"x1"`, `"name":"X"`, `"f40":"late"`)
	e := &EntitySpec{Type: "t", ID: "id", Name: "name"}
	got := e.Entities([]byte(`[{` + strings.Join(kv, ",") + `},{"id":"x2"}]`))
	want := map[string]json.RawMessage{}
	for i := range 2 * linearFields {
		want[fmt.Sprintf("f%d", i)] = json.RawMessage(fmt.Sprint(i))
	}
	want["f3"], want["f40"] = json.RawMessage(`"again"`), json.RawMessage(`"late"`)
	if len(got) != 2 || got[0].ID != "x1" || got[0].Name != "X" || !reflect.DeepEqual(got[0].Attrs, want) || got[1].ID != "x2" || len(got[1].Attrs) != 0 {
		t.Fatalf("entities = %+v", got)
	}
}
