package services

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzLeafScan holds the one-pass scan to gjson's walk: the same leaves,
// texts, order, count and stop, on any input gjson reads as a container
// (the scan gives way to gjson's walk on what is not JSON).
func FuzzLeafScan(f *testing.F) {
	for _, s := range []string{
		`{"code":200,"data":{"records":[{"id":1000,"title":"Spring","status":"PUBLISHED"},{"id":1001,"title":"Spring"}]}}`,
		`[1,"1",1.50,-0,1e3,2E-2,12345678901234567890,true,false,null,"",{"a":[]},{}]`,
		`{"a":"\u00e9\n\"q\"","b":"\ud83d\ude00","c":"\ud800","a":"dup"}`,
		` [ 1 , { "k" : [ "x" , "y" ] } ] `,
		`[01]`, `[1.]`, `[-]`, `{"a" 1}`, `[1,]`, `{"a":tru}`, `[1]x`, `["unterminated]`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		for _, limit := range []int{1, 3, 100} {
			f.Add(s, limit, true)
			f.Add(s, limit, false)
		}
	}
	f.Fuzz(func(t *testing.T, raw string, limit int, json bool) {
		v := gjson.Parse(raw)
		if !v.IsArray() && !v.IsObject() || limit <= 0 || limit > MaxWalkLeaves {
			return
		}
		fast := walker{out: []byte("x"), limit: limit, json: json}
		slow := walker{out: []byte("x"), limit: limit, json: json}
		m1, m2 := fast.leaves(v), slow.walk(v)
		fast.release()
		slow.release()
		if m1 != m2 || fast.n != slow.n || !bytes.Equal(fast.out, slow.out) {
			t.Fatalf("%q limit %d: scan %v %d %q, gjson %v %d %q", raw, limit, m1, fast.n, fast.out, m2, slow.n, slow.out)
		}
	})
}
