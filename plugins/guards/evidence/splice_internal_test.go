package evidence

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
)

// SpliceCorpus are requests whose evidence the guard writes both ways: the
// item and entities the guest encodes itself (item, appendItem, entities)
// and the parts the host splices (spliceItem, spliceEntities). Large and
// exact numbers, unicode and escapes, HTML characters and U+2028, spacing,
// nested values, several extracts and one with gjson syntax, a write's
// merge, a failure, a truncated response, a request without a call id.
var SpliceCorpus = func() [][]byte {
	const search = `"success":{"path":"code","op":"EQ","value":0},"extracts":[{"key":"rows","path":"data.rows","entity":{"type":"row","id":"id","name":"name"}}]`
	multi := `"extracts":[{"key":"rows","path":"data.rows","entity":{"type":"row"}},{"key":"one","path":"data.one","fields":["x"]},` +
		`{"path":"data.n"},{"key":"gone","path":"data.none"},{"key":"rows","path":"data.a.b"}]`
	odd := `"extracts":[{"key":"odd","path":"data.k#1","entity":{"type":"o"}},{"path":"data.n"}]`
	write := `"sideEffect":"WRITE","success":{"path":"data","op":"EXISTS"},"extracts":[{"key":"a","path":"data","entity":{"type":"article","id":"siteId","name":"title"}}]`
	big := `{"code":0,"data":{"rows":[` + strings.Repeat(`{"id":12345678901234567890,"name":"大数 1e400","v":1e400,"w":-0.000000000000000000001},`, 40) + `{"id":"last"}]}}`
	var recs []string
	for i := range 30 {
		recs = append(recs, fmt.Sprintf(`{"id":%d,"title":"Spring launch article number %d","status":"PUBLISHED","updatedAt":"2026-11-2%dT10:00:00Z"}`, 1000+i, i, i%10))
	}
	bench := `{"code":0,"msg":"ok","data":{"rows":[` + strings.Join(recs, ",") + `]}}`
	// over the 64 KiB the guard lists through the host: read in the guest
	var many []string
	for i := range 700 {
		many = append(many, fmt.Sprintf(`{"id":%d,"name":"record %d","pad":"%s"}`, i, i, strings.Repeat("p", 60)))
	}
	large := `{"code":0,"data":{"rows":[` + strings.Join(many, ",") + `]}}`
	type r struct{ contract, outcome, code, resp, extra, args string }
	rs := []r{
		{search, "SUCCESS", "", `{"code":0,"data":{"rows":[{"id":1,"name":"A"},{"id":"b","name":"B"}]}}`, "", ""},
		{search, "SUCCESS", "", bench, "", ""},
		{search, "SUCCESS", "", big, "", ""},
		{search, "SUCCESS", "", large, `,"config":{"maxPayloadBytes":16777216}`, ""},
		{search, "SUCCESS", "", `{"code":0,"data":{"rows":[{"id":"é\u2028\"\\/","name":"<b>&amp;</b> 官网 😀","x":"\u00e9\ud83d\ude00"},{"id":"\u0000ctl","name":"tab\there"}]}}`, "", ""},
		{search, "SUCCESS", "", "{ \"code\" : 0 ,\n \"data\" : { \"rows\" : [ { \"id\" : 1 , \"name\" : \"a b\" , \"n\" : { \"deep\" : [ 1 , { \"x\" : \"y z\" } ] } } ] } }", "", ""},
		{search, "SUCCESS", "", `{"code":0,"data":{"rows":[]}}`, "", ""},
		{search, "SUCCESS", "", `{"code":0,"data":{"rows":{"id":7,"name":"seven"}}}`, "", ""},
		{search, "SUCCESS", "", `{"code":1,"data":{"rows":[{"id":1}]}}`, "", ""},
		{search, "FAILED", "TOOL_TIMEOUT", `null`, "", ""},
		{search, "FAILED", "TOOL_BUSINESS_FAILED", `{"code":5,"msg":"no"}`, "", ""},
		{search, "SUCCESS", "", `{"code":0,"data":{"rows":[{"id":1,"name":"` + strings.Repeat("长", 60) + `"}]},"pad":"` + strings.Repeat("x <&> ", 40) + `"}`, `,"config":{"maxPayloadBytes":100}`, ""},
		{search, "SUCCESS", "", strings.Replace(bench, `"msg":"ok"`, `"msg":"`+strings.Repeat("é", 150)+`"`, 1), "", `{"q":"` + strings.Repeat(`ü\"`, 400) + `"}`},
		{multi, "SUCCESS", "", `{"data":{"rows":[{"id":1,"name":"A","v":"x"},{"id":"2","v":1.50}],"one":{"x":null,"y":"y"},"n":3,"a":{"b":[["x"],{"z":"A"}]}}}`, "", ""},
		{multi, "SUCCESS", "", `{"data":{"rows":[],"one":{"x":""},"n":0,"a":{"b":{}}}}`, "", ""},
		{odd, "SUCCESS", "", `{"data":{"k#1":[{"id":1},{"id":2}],"n":2}}`, "", ""},
		{write, "SUCCESS", "", `{"data":{"title":"from response","state":"NEW"}}`, "", `{"siteId": 7, "title":"from args", "owner":"me", "nested":{"x":1}}`},
		{`"extracts":[]`, "SUCCESS", "", `""`, "", ""},
		{`"extracts":[]`, "SUCCESS", "", `[1,2,{"a":[]}]`, `,"config":{"sourceTypes":{"s.x":"url"}}`, ""},
	}
	var out [][]byte
	for i, c := range rs {
		args := c.args
		if args == "" {
			args = `{"q": "cms", "page": 1.50, "big": 98765432109876543210}`
		}
		id := `"callId":"c1",`
		tool := "s"
		if i == len(rs)-1 {
			id, tool = "", "s.x"
		}
		out = append(out, []byte(`{"tool":"`+tool+`",`+id+`"bound":`+args+`,"contract":{`+c.contract+`},"result":{"outcome":"`+c.outcome+
			`","code":"`+c.code+`","text":"完成。"},"response":`+c.resp+c.extra+`}`))
	}
	return out
}()

// TestSpliceAgrees: for every request of the corpus, the effects the guard
// asks the host to splice are byte for byte the item and entities it
// encodes itself, and the truncated observation is the same.
func TestSpliceAgrees(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 8, 30, 0, 123456789, time.UTC)
	for i, req := range SpliceCorpus {
		e, err := readCall(envelope.Bytes(req))
		if err != nil {
			t.Fatal(err)
		}
		it := e.item(now.Format(time.RFC3339Nano))
		want := []string{abi.EffectEvidenceRegister + " " + string(appendItem(nil, &it, e.compactRaw))}
		for _, ent := range e.entities() {
			want = append(want, abi.EffectEntityRecord+" "+string(ent))
		}
		var obs string
		if it.Truncated {
			text, data, err := e.truncated()
			if err != nil {
				t.Fatal(err)
			}
			obs = text + " " + string(data)
		}
		n, err := guest.NewNative(Plugin, 1<<20, guest.WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		v, err := n.Call(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ef := range v.Effects {
			got = append(got, ef.Kind+" "+string(ef.Payload))
		}
		gotObs := ""
		if v.Observation != nil {
			gotObs = v.Observation.Text + " " + string(v.Observation.Data)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || gotObs != obs || (v.Observation == nil) == it.Truncated {
			t.Errorf("request %d: spliced\n%s\n%s\nencoded in the guest\n%s\n%s", i, strings.Join(got, "\n"), gotObs, strings.Join(want, "\n"), obs)
		}
	}
}
