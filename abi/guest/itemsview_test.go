package guest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/services"
)

// describe lists what a reader of items sees: each item's kind, raw and
// text and its members, asked in order (Item, then EachMember).
func describe(n int, item func(i int) (byte, string, string), members func(i int, fn func(key string, kind byte, raw, text string))) string {
	var b strings.Builder
	for i := range n {
		k, raw, text := item(i)
		fmt.Fprintf(&b, "%c %q %q {", max(k, '0'), raw, text)
		members(i, func(key string, kind byte, raw, text string) { fmt.Fprintf(&b, " %q:%c %q %q", key, kind, raw, text) })
		b.WriteString(" }\n")
	}
	return b.String()
}

// TestItemsView: the view reads every host answer as Items decodes it, in
// order and out of order.
func TestItemsView(t *testing.T) {
	t.Parallel()
	req := []byte(`{"a":[{"id":1,"t":"x\ty","o":{"z":1}},[1],"s",null,{"id":"1","n":null,"ok":false},{}],"o":{"k":"v"},"s":"v"}`)
	for _, path := range []string{"a", "o", "s", "none"} {
		for _, limit := range []int{0, 1, 3, 10} {
			out, err := services.Items(req, path, limit)
			if err != nil {
				t.Fatal(err)
			}
			its := parseItems(string(out))
			want := describe(len(its.List), func(i int) (byte, string, string) {
				it := its.List[i]
				return it.Kind, it.Raw, it.Text
			}, func(i int, fn func(string, byte, string, string)) {
				for _, m := range its.MembersOf(i) {
					fn(m.Key, m.Kind, m.Raw, m.Text)
				}
			})
			v := viewItems(string(out))
			if v.Len() != len(its.List) || v.Kind != its.Kind {
				t.Fatalf("%s/%d: %d items of kind %c, Items %d of %c", path, limit, v.Len(), v.Kind, len(its.List), its.Kind)
			}
			if got := describe(v.Len(), v.Item, v.EachMember); got != want {
				t.Errorf("%s/%d: in order\n%s\nItems\n%s", path, limit, got, want)
			}
			// backwards, on a fresh view: each item found by reading on
			back := viewItems(string(out))
			var got []string
			for i := back.Len() - 1; i >= 0; i-- {
				got = append([]string{describe(1, func(int) (byte, string, string) { return back.Item(i) },
					func(_ int, fn func(string, byte, string, string)) { back.EachMember(i, fn) })}, got...)
			}
			if strings.Join(got, "") != want {
				t.Errorf("%s/%d: backwards\n%s\nItems\n%s", path, limit, strings.Join(got, ""), want)
			}
		}
	}
}

// FuzzItemsView: no answer, however cut or corrupted, panics the guest.
func FuzzItemsView(f *testing.F) {
	good, _ := services.Items([]byte(`{"a":[{"id":1,"t":"x"},2]}`), "a", 10)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		v := viewItems(string(b))
		for i := range min(v.Len(), 64) {
			v.Item(i)
			v.EachMember(i, func(string, byte, string, string) {})
		}
	})
}
