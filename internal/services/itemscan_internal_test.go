package services

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzItemsScan holds the one-pass items scan to gjson's ForEach: the same
// answer, byte for byte, on any input gjson reads as an array or an object
// (the scan gives way to gjson on what is not JSON).
func FuzzItemsScan(f *testing.F) {
	for _, s := range []string{
		`[{"id":1000,"title":"Spring","status":"PUBLISHED","tags":["a"],"meta":{"x":1}},{"id":1001,"title":"Spring"}]`,
		`[1,"1",1.50,-0,1e3,2E-2,12345678901234567890,true,false,null,"",{"a":[]},{},[]]`,
		`{"a":"\u00e9\n\"q\"","b":"\ud83d\ude00","c":"\ud800","a":"dup","k\"ey":1}`,
		` [ 1 , { "k" : [ "x" , "y" ] } ] `, `[]`, `{}`, `[ ]`, `{ }`,
		`[01]`, `[1.]`, `[-]`, `{"a" 1}`, `[1,]`, `{"a":tru}`, `[1]x`, `["unterminated]`, `[{"a":1,}]`, `[{"a":{"b":[1,2}}]`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		for _, limit := range []int{1, 2, 100} {
			f.Add(s, limit)
		}
	}
	f.Fuzz(func(t *testing.T, raw string, limit int) {
		v := gjson.Parse(raw)
		if !v.IsArray() && !v.IsObject() || limit <= 0 || limit > MaxItems {
			return
		}
		head := []byte{walkKind(v), 0, 0, 0, 0}
		slow := itemsGjson(bytes.Clone(head), v, limit)
		fast, ok := scanItems(bytes.Clone(head), v.Raw, limit)
		if ok && !bytes.Equal(fast, slow) {
			t.Fatalf("%q limit %d: scan %q, gjson %q", raw, limit, fast, slow)
		}
		if got := ItemsValue(v, limit); !bytes.Equal(got, slow) {
			t.Fatalf("%q limit %d: ItemsValue %q, gjson %q", raw, limit, got, slow)
		}
	})
}

// TestItemsScanTakesValidJSON checks that the scan answers (rather than
// giving way to gjson) on the records it is for.
func TestItemsScanTakesValidJSON(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`[{"id":1000,"title":"Spring","status":"PUBLISHED","tags":["a",{"b":null}],"meta":{"x":1.5e3}},{"id":1001,"t\u00e9":"x\ny"}]`,
		` {"a":1} `, `[]`, `[1, "two", true, false, null, -0.5]`,
	} {
		v := gjson.Parse(raw)
		if _, ok := scanItems(make([]byte, 5), v.Raw, 100); !ok {
			t.Errorf("%q: the scan gave way", raw)
		}
	}
}
