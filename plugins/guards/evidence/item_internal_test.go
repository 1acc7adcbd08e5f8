package evidence

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

func TestItem(t *testing.T) {
	t.Parallel()
	const c = `"contract":{"success":{"path":"code","op":"EQ","value":0},"extracts":[{"key":"rows","path":"rows","entity":{"type":"site"}}]}`
	req := func(outcome, resp, extra string) []byte {
		return []byte(`{"tool":"s","callId":"c1","bound":{"q":1},` + c + `,"result":{"outcome":"` + outcome + `","code":"TOOL_TIMEOUT","text":"完成"},"response":` + resp + extra + `}`)
	}
	idCall, err := readCall(envelope.Bytes(`{"callId":"c1","result":{"outcome":"SUCCESS"}}`))
	if err != nil {
		t.Fatal(err)
	}
	id := idCall.id
	cases := []struct {
		name, outcome, resp, extra string
		truncated                  bool
		size, entities, budget     int
		contains                   []string
	}{
		{"with data", "SUCCESS", `{"code":0,"rows":[{"id":"a","name":"A"}]}`, "", false, 41, 1, 16384,
			[]string{`"result":"success_with_data"`, `"values":["a","A"]`, `"retrievedAt":"T"`, `"locator":"s {\"q\":1}"`}},
		{"empty", "SUCCESS", `{"code":0,"rows":[]}`, "", false, 20, 0, 16384, []string{`"result":"success_empty","empty":true`}},
		{"failure", "FAILED", `null`, "", false, 4, 0, 16384, []string{`"status":"FAILED","businessOk":false,"result":"failure","empty":false`}},
		{"truncated", "SUCCESS", `{"code":0,"rows":[],"pad":"` + strings.Repeat("x", 100) + `"}`, `,"config":{"maxPayloadBytes":64}`, true, 129, 0, 64,
			[]string{`"truncated":true,"size":129`}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := readCall(envelope.Bytes(req(tt.outcome, tt.resp, tt.extra)))
			if err != nil {
				t.Fatal(err)
			}
			it, entities := e.item("T"), len(e.entities())
			if e.id != id || it.Truncated != tt.truncated || len(e.resp) != tt.size || entities != tt.entities || e.budget != tt.budget {
				t.Errorf("id %s truncated %v size %d entities %d budget %d; want %s %v %d %d %d",
					e.id, it.Truncated, len(e.resp), entities, e.budget, id, tt.truncated, tt.size, tt.entities, tt.budget)
			}
			b, _ := json.Marshal(it)
			for _, s := range tt.contains {
				if !strings.Contains(string(b), s) {
					t.Errorf("item %s\nlacks %s", b, s)
				}
			}
		})
	}
	t.Run("entities", func(t *testing.T) {
		t.Parallel()
		e, err := readCall(envelope.Bytes(req("SUCCESS", `{"code":0,"rows":[{"id":"a","name":"A"},{"id":"b"}]}`, "")))
		if err != nil {
			t.Fatal(err)
		}
		out := e.entities()
		if len(out) != 2 || string(out[0]) != `{"type":"site","id":"a","name":"A"}` || string(out[1]) != `{"type":"site","id":"b"}` {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("truncate", func(t *testing.T) {
		t.Parallel()
		e, err := readCall(envelope.Bytes(req("SUCCESS", `"`+strings.Repeat("y", 80)+`"`, `,"config":{"maxPayloadBytes":64},"locale":"en"`)))
		if err != nil {
			t.Fatal(err)
		}
		text, data, err := e.truncated()
		want := "完成; the response has 82 bytes, over the 64-byte limit, so only the first 64 bytes are shown (truncated: true); the whole response is evidence " + id + ", read the rest page by page with builtin_evidence_get"
		if err != nil || text != want || len(text) != 219 || !strings.HasPrefix(string(data), `{"truncated":true,"size":82,"limit":64,"evidenceId":"`+id+`","head":"\"yyy`) {
			t.Fatalf("got %s %s, %v", text, data, err)
		}
	})
	t.Run("not executed", func(t *testing.T) {
		t.Parallel()
		if _, err := readCall(envelope.Bytes(req("REJECTED", `null`, ""))); err == nil {
			t.Fatal("evidence of a rejected call")
		}
	})
}

// TestLeavesDedupe: the leaves keep their first order and skip every
// duplicate, in the linear search and after the set takes over, across
// extracts, up to MaxValues.
func TestLeavesDedupe(t *testing.T) {
	t.Parallel()
	var vals []string
	for i := range 3 * linearLeaves {
		vals = append(vals, strconv.Itoa(i%(2*linearLeaves)), `"x"`, "null")
	}
	doc := gjson.Parse("[" + strings.Join(vals, ",") + "]")
	var want []string
	for i := range 2 * linearLeaves {
		want = append(want, strconv.Itoa(i))
		if i == 0 {
			want = append(want, "x")
		}
	}
	var l leaves
	got := l.appendLeaves(nil, doc)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("leaves %q, want %q", got, want)
	}
	// A second extract adds only what is new.
	got = l.appendLeaves(got, gjson.Parse(`{"a":"x","b":"new","c":3}`))
	if n := len(got); n != len(want)+1 || got[n-1] != "new" {
		t.Fatalf("after a second extract %q", got[len(want):])
	}
	var many []string
	for i := range MaxValues + 10 {
		many = append(many, strconv.Itoa(i))
	}
	var l2 leaves
	if got := l2.appendLeaves(nil, gjson.Parse("["+strings.Join(many, ",")+"]")); len(got) != MaxValues {
		t.Fatalf("%d leaves, want %d", len(got), MaxValues)
	}
}

// TestWalkedLeaves: the leaves the host's walk gives (the plugin run
// through the SDK) are the ones the guest's own walk gives, across
// extracts, duplicates, nulls, numbers and the MaxValues bound; and the
// locator's canonical arguments from the host are the guest's.
func TestWalkedLeaves(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range MaxValues + 50 {
		many = append(many, strconv.Itoa(i%(MaxValues-5)), `"s`+strconv.Itoa(i)+`"`)
	}
	cases := map[string]struct{ extracts, resp string }{
		"across extracts": {`[{"key":"a","path":"data.rows"},{"key":"b","path":"data.more"},{"path":"data.total"}]`,
			`{"code":0,"data":{"rows":[{"id":1,"v":1.50,"n":null,"t":true},{"id":"1","x":{"y":["q",false]}}],"more":["q","new",1e3],"total":2}}`},
		"escaped path":   {`[{"key":"a","path":"da*ta.r|ows"}]`, `{"code":0,"da*ta":{"r|ows":["x","y","x"]}}`},
		"over MaxValues": {`[{"key":"a","path":"a"},{"key":"b","path":"b"}]`, `{"code":0,"a":[` + strings.Join(many[:MaxValues], ",") + `],"b":[` + strings.Join(many, ",") + `]}`},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := []byte(`{"abi":1,"kind":"guard","phase":"after","tool":"s","callId":"c1","args":{"q":1},"bound":{"z":[1, 2.50],"a":"\u00e9"},` +
				`"contract":{"success":{"path":"code","op":"EQ","value":0},"extracts":` + tt.extracts + `},` +
				`"result":{"outcome":"SUCCESS","text":"ok"},"response":` + tt.resp + `}`)
			e, err := readCall(envelope.Bytes(req))
			if err != nil {
				t.Fatal(err)
			}
			it := e.item("T")
			if len(it.Values) == 0 {
				t.Fatal("no leaves")
			}
			n, err := guest.NewNative(Plugin, 0)
			if err != nil {
				t.Fatal(err)
			}
			v, err := n.Call(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Effects) == 0 || v.Effects[0].Kind != abi.EffectEvidenceRegister {
				t.Fatalf("no evidence: %+v", v)
			}
			var got abi.EvidenceItem
			if err := json.Unmarshal(v.Effects[0].Payload, &got); err != nil {
				t.Fatal(err)
			}
			if got.Locator != it.Locator || got.Locator != `s {"a":"é","z":[1,2.5]}` {
				t.Errorf("locator from the host %s, from the guest %s", got.Locator, it.Locator)
			}
			if strings.Join(got.Values, "\x00") != strings.Join(it.Values, "\x00") {
				t.Fatalf("walked leaves %d %.200q\nguest's leaves %d %.200q", len(got.Values), got.Values, len(it.Values), it.Values)
			}
		})
	}
}

// TestEntityPayloads: the payloads encoded from the contract's entity
// fields are the bytes abi.Marshal gives the contract's entities
// (contract.Extract), for reads and writes, compact responses and not.
func TestEntityPayloads(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, side, entity, args, resp string
	}{
		{"records", "NONE", `{"type":"article","id":"id","name":"title"}`, `{"q":1}`,
			`{"data":{"records":[{"id":1001,"title":"A","status":"OK","n":1.50},{"id":"x","title":7,"z":null,"o":{"a":1}},{"title":"no id"},{"id":""},[1],null]}}`},
		{"spaced", "NONE", `{"type":"a"}`, `{}`, `{"data":{"records":[ {"id" : "s 1" , "name" : "N <&>" , "b" : true , "c" : [1] } , {"id":true,"id":"dup","k":"v\"q"} ]}}`},
		{"one object", "NONE", `{"type":"a"}`, `{}`, `{"data":{"records":{"id":"o1","name":"","zz":"1","aa":"2"}}}`},
		{"scalars", "NONE", `{"type":"tag","scalar":"id"}`, `{}`, `{"data":{"records":["t1",2,null,"",false]}}`},
		{"write", "WRITE", `{"type":"site","id":"siteId","name":"title"}`, `{"siteId": 7, "title":"from args", "owner":"me", "nested":{"x":1}}`,
			`{"data":{"records":{"title":"from response","state":"NEW"}}}`},
		{"write array", "WRITE", `{"type":"site","id":"siteId"}`, `{"siteId":"s","a":1}`, `{"data":{"records":[{"a":2},{"siteId":"t"}]}}`},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := `{"sideEffect":"` + tt.side + `","success":{"path":"data","op":"EXISTS"},"extracts":[{"key":"k","path":"data.records","entity":` + tt.entity + `}]}`
			req := envelope.Bytes(`{"tool":"s","callId":"c1","bound":` + tt.args + `,"contract":` + c +
				`,"result":{"outcome":"SUCCESS"},"response":` + tt.resp + `}`)
			e, err := readCall(req)
			if err != nil {
				t.Fatal(err)
			}
			e.item("T")
			x := e.toolSpec.Extract([]byte(e.rawArgs.Raw), e.resp)
			var want []string
			for _, ent := range x.Entities() {
				a := abi.Entity{Type: ent.Type, ID: ent.ID, IDJSON: ent.IDJSON, Name: ent.Name, Attrs: ent.Attrs}
				if len(a.Attrs) == 0 {
					a.Attrs = nil
				}
				b, err := abi.Marshal(a)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, string(b))
			}
			var got []string
			for _, p := range e.entities() {
				got = append(got, string(p))
			}
			if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("entities\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestHostLookupAgrees: the item and entities a guest builds from its
// host's lookups (guest.Call: query and walk) are the bytes it builds
// scanning the response itself (contract.ExtractValues), for arrays,
// objects with and without fields, scalars, missing and nested paths, a
// path with gjson syntax in a segment, and extracts whose leaves overlap.
func TestHostLookupAgrees(t *testing.T) {
	t.Parallel()
	const plain = `[{"key":"rows","path":"data.rows","entity":{"type":"row"}},` +
		`{"key":"one","path":"data.one","fields":["x","y"]},{"path":"data.n"},{"key":"gone","path":"data.none"},` +
		`{"key":"deep","path":"data.a.b"}`
	// a segment with gjson syntax: the contract looks every extract up
	odd := plain + `,{"key":"odd","path":"data.k#1"}]`
	resps := []string{
		`{"data":{"rows":[{"id":1,"name":"A","v":"x"},{"id":"2","v":1.50}],"one":{"x":null,"y":"y"},"n":3,"a":{"b":[["x"],{"z":"A"}]},"k#1":[1,2]}}`,
		`{"data":{"rows":[],"one":{"x":""},"n":0,"a":{"b":{}},"k#1":[]}}`,
		`{ "data" : { "rows" : { "id" : 7 , "name" : "seven" } , "one" : "s" , "n" : null } }`,
		`{"data":null}`,
		`[1,2]`,
	}
	for i := range 2 * len(resps) {
		resp, extracts := resps[i/2], plain+"]"
		if i%2 == 1 {
			extracts = odd
		}
		side := `"sideEffect":"NONE"`
		if i%4 == 2 { // a write: its arguments merged under each entity
			side = `"sideEffect":"WRITE","success":{"path":"data","op":"EXISTS"}`
		}
		req := []byte(`{"tool":"s","callId":"c1","bound":{"q":1,"id":"from-args","v":"args"},"contract":{` + side + `,"extracts":` + extracts +
			`},"result":{"outcome":"SUCCESS"},"response":` + resp + `}`)
		build := func(r envelope.Reader) string {
			e, err := readCall(r)
			if err != nil {
				t.Fatal(err)
			}
			it := e.item("T")
			out := string(appendItem(nil, &it, e.compactRaw))
			for _, ent := range e.entities() {
				out += "\n" + string(ent)
			}
			return out
		}
		want := build(envelope.Bytes(req))
		var got string
		var fromHost bool
		n, err := guest.NewNative(guest.Plugin{Manifest: Plugin.Manifest, Handle: func(c *guest.Call) {
			got = build(c)
			e, _ := readCall(c)
			e.extraction()
			fromHost = e.walked != nil
			if _, listed := e.listItems(0); i == 0 && !listed {
				t.Error("the records' items were not listed by the host")
			}
			c.Pass(nil)
		}}, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Call(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got != want || fromHost != (i%2 == 0) {
			t.Errorf("case %d (from the host %v): got\n%s\nscanned in the guest\n%s", i, fromHost, got, want)
		}
	}
}
