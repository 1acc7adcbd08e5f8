package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op   Op
		resp string // the whole response; the path is "v"
		want string // configured value, raw JSON
		ok   bool
	}{
		// EQ is numeric when both sides are numbers: 200 equals "200".
		{OpEQ, `{"v":200}`, `"200"`, true},
		{OpEQ, `{"v":"200"}`, `200`, true},
		{OpEQ, `{"v":200.0}`, `200`, true},
		{OpEQ, `{"v":"2e2"}`, `200`, true},
		{OpEQ, `{"v":201}`, `"200"`, false},
		{OpEQ, `{"v":"ok"}`, `"ok"`, true},
		{OpEQ, `{"v":"OK"}`, `"ok"`, false},
		{OpEQ, `{"v":true}`, `"true"`, true},
		{OpEQ, `{"v":true}`, `true`, true},
		{OpEQ, `{"v":null}`, `null`, true},
		{OpEQ, `{}`, `null`, true},
		{OpEQ, `{}`, `200`, false},
		{OpEQ, `{"v":"0x10"}`, `16`, false},
		{OpNE, `{"v":500}`, `200`, true},
		{OpNE, `{"v":"200"}`, `200`, false},
		{OpNE, `{}`, `"FAILED"`, true},
		{OpIN, `{"v":"0"}`, `[0, 200]`, true},
		{OpIN, `{"v":201}`, `[0, 200]`, false},
		{OpIN, `{"v":"a"}`, `"a"`, true},
		{OpNotIN, `{"v":500}`, `[500, 501]`, false},
		{OpNotIN, `{"v":200}`, `[500, 501]`, true},
		{OpNotIN, `{}`, `[500]`, true},
		// TRUTHY: not null, false, 0, "", "0", "false", or an empty container.
		{OpTruthy, `{"v":true}`, ``, true},
		{OpTruthy, `{"v":1}`, ``, true},
		{OpTruthy, `{"v":"yes"}`, ``, true},
		{OpTruthy, `{"v":"False"}`, ``, true},
		{OpTruthy, `{"v":[0]}`, ``, true},
		{OpTruthy, `{"v":{"a":null}}`, ``, true},
		{OpTruthy, `{"v":null}`, ``, false},
		{OpTruthy, `{"v":false}`, ``, false},
		{OpTruthy, `{"v":0}`, ``, false},
		{OpTruthy, `{"v":0.0}`, ``, false},
		{OpTruthy, `{"v":""}`, ``, false},
		{OpTruthy, `{"v":"0"}`, ``, false},
		{OpTruthy, `{"v":"false"}`, ``, false},
		{OpTruthy, `{"v":[]}`, ``, false},
		{OpTruthy, `{"v":{}}`, ``, false},
		{OpTruthy, `{}`, ``, false},
		// EXISTS: the path exists, null included.
		{OpExists, `{"v":null}`, ``, true},
		{OpExists, `{"v":0}`, ``, true},
		{OpExists, `{}`, ``, false},
		{Op("GT"), `{"v":1}`, `0`, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s", tt.op, tt.resp, tt.want), func(t *testing.T) {
			t.Parallel()
			if got := Compare(tt.op, gjson.Get(tt.resp, "v"), json.RawMessage(tt.want)); got != tt.ok {
				t.Errorf("Compare = %v, want %v", got, tt.ok)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	long := `{"code":500,"detail":"` + strings.Repeat("é", 400) + `"}`
	tests := []struct {
		name, tool, resp string
		want             Verdict
	}{
		{"no success: any response is ok", `{}`, ``, Verdict{OK: true}},
		{"success holds", `{"success":{"path":"code","op":"EQ","value":200}}`, `{"code":"200"}`, Verdict{OK: true}},
		{"success fails, error paths read", `{"success":{"path":"code","op":"EQ","value":200},"error":{"code":"code","message":"msg"}}`,
			`{"code":40401,"msg":"space not found"}`, Verdict{Code: "40401", Message: "space not found"}},
		{"code missing: caller uses TOOL_BUSINESS_FAILED; message falls back to the response",
			`{"success":{"path":"code","op":"EQ","value":200},"error":{"code":"errCode","message":"errMsg"}}`,
			`{"code": 500 }`, Verdict{Message: `{"code":500}`}},
		{"empty response is a business failure", `{"success":{"path":"code","op":"EXISTS"}}`, "  ", Verdict{Message: ""}},
		{"null response is a business failure", `{"success":{"path":"","op":"EXISTS"}}`, "null", Verdict{Message: "null"}},
		{"empty path means the whole response", `{"success":{"path":"","op":"TRUTHY"}}`, `[1]`, Verdict{OK: true}},
		{"unset op only needs a response", `{"success":{"path":"code"}}`, `{}`, Verdict{OK: true}},
		{"long message truncated", `{"success":{"path":"code","op":"EQ","value":200}}`, long,
			Verdict{Message: Truncate(compact([]byte(long)), MessageLimit)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := mustTool(t, tt.tool).Judge([]byte(tt.resp)); got != tt.want {
				t.Errorf("Judge = %+v, want %+v", got, tt.want)
			}
		})
	}
	var nilTool *Tool
	if !nilTool.Judge(nil).OK {
		t.Error("an unconfigured tool is judged ok")
	}
	if got := Truncate([]byte(long), MessageLimit); len(got) > MessageLimit+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("Truncate = %d bytes", len(got))
	}
}

func TestExtract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args, resp string
		counts                 string // "key=count ..."
		empty                  bool
		entities               string
	}{
		{"array length", `{"extracts":[{"key":"rows","path":"data.records"}]}`, ``,
			`{"data":{"records":[{"id":1},{"id":2}]}}`, "rows=2", false, ""},
		{"empty array", `{"extracts":[{"key":"rows","path":"data.records"}]}`, ``,
			`{"data":{"records":[]}}`, "rows=0", true, ""},
		{"object with fields: any field set counts 1", `{"extracts":[{"key":"d","path":"data","fields":["id","code"]}]}`, ``,
			`{"data":{"id":null,"code":"X"}}`, "d=1", false, ""},
		{"object with fields all empty counts 0", `{"extracts":[{"key":"d","path":"data","fields":["id","code"]}]}`, ``,
			`{"data":{"id":null,"code":"","other":1}}`, "d=0", true, ""},
		{"every extract 0 is empty, one 1 is not", `{"extracts":[{"key":"a","path":"a"},{"path":"b"}]}`, ``,
			`{"a":[],"b":{"x":1}}`, "a=0 =1", false, ""},
		{"missing path counts 0", `{"extracts":[{"key":"a","path":"nope"}]}`, ``, `{"a":1}`, "a=0", true, ""},
		{"no extracts: empty object", `{}`, ``, `{}`, "", true, ""},
		{"no extracts: empty body", `{}`, ``, ``, "", true, ""},
		{"no extracts: data", `{}`, ``, `{"a":0}`, "", false, ""},
		{"entities per item with custom id and name",
			`{"extracts":[{"key":"s","path":"data","entity":{"type":"space","id":"spaceId","name":"spaceName"}}]}`, ``,
			`{"data":[{"spaceId":"S1","spaceName":"News","level":2,"tags":["x"]},{"spaceName":"no id"}]}`, "s=2", false,
			`space:S1 "News" {"level":2}`},
		{"default id and name",
			`{"extracts":[{"key":"c","path":"data","entity":{"type":"customer"}}]}`, ``,
			`{"data":{"id":42,"name":"ACME"}}`, "c=1", false, `customer:42 "ACME" {}`},
		{"scalar without scalar makes no entity",
			`{"extracts":[{"key":"a","path":"data","entity":{"type":"article"}}]}`, ``,
			`{"data":"A-1"}`, "a=1", false, ""},
		{"scalar named by scalar",
			`{"extracts":[{"key":"a","path":"data","entity":{"type":"article","scalar":"id"}}]}`, ``,
			`{"data":"A-1"}`, "a=1", false, `article:A-1 "" {}`},
		{"write tool: args as base, response wins",
			`{"sideEffect":"WRITE","success":{"path":"code","op":"EQ","value":200},"extracts":[{"key":"a","path":"data","entity":{"type":"article","scalar":"id","name":"title"}}]}`,
			`{"title":"Hello","spaceId":"S1","id":"from-args","tags":["x"]}`,
			`{"code":200,"data":"A-1"}`, "a=1", false, `article:A-1 "Hello" {"spaceId":"S1"}`},
		{"write tool: response field beats argument",
			`{"sideEffect":"WRITE","success":{"path":"code","op":"EQ","value":200},"extracts":[{"key":"a","path":"data","entity":{"type":"article","name":"title"}}]}`,
			`{"title":"Draft title","spaceId":"S1"}`,
			`{"code":200,"data":{"id":"A-2","title":"Final title"}}`, "a=1", false, `article:A-2 "Final title" {"spaceId":"S1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := mustTool(t, tt.tool).Extract([]byte(tt.args), []byte(tt.resp))
			var counts []string
			for _, it := range x.Items {
				counts = append(counts, fmt.Sprintf("%s=%d", it.Key, it.Count))
			}
			if strings.Join(counts, " ") != tt.counts || x.Empty != tt.empty {
				t.Errorf("counts = %v empty=%v; want %q empty=%v", counts, x.Empty, tt.counts, tt.empty)
			}
			var ents []string
			for _, e := range x.Entities() {
				attrs, _ := json.Marshal(e.Attrs)
				ents = append(ents, fmt.Sprintf("%s %q %s", e.Ref(), e.Name, attrs))
			}
			if strings.Join(ents, "; ") != tt.entities {
				t.Errorf("entities = %v\nwant %s", ents, tt.entities)
			}
		})
	}
}

func TestExtractItemValue(t *testing.T) {
	t.Parallel()
	x := mustTool(t, `{"extracts":[{"key":"tag_list","path":"data"}]}`).Extract(nil, []byte(`{"data":[{"id":"t1"}]}`))
	it, ok := x.Item("tag_list")
	if !ok || it.Value.Get("0.id").Str != "t1" {
		t.Errorf("Item = %+v %v", it, ok)
	}
	if _, ok := x.Item("other"); ok {
		t.Error("unknown item found")
	}
}

func TestOutputEntities(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("k", []byte(`{"outputs":{"articleId":{"entity":{"type":"article","scalar":"id"}},"spaces":{"type":"LIST","fields":["spaceId"],"entity":{"type":"space","id":"spaceId"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Outputs["articleId"].Entity.Entities([]byte(`"A-9"`)); len(e) != 1 || e[0].Ref() != "article:A-9" {
		t.Errorf("scalar output entity = %+v", e)
	}
	if e := c.Outputs["spaces"].Entity.Entities([]byte(`[{"spaceId":1},{"spaceId":2}]`)); len(e) != 2 || e[1].ID != "2" || string(e[1].IDJSON) != "2" {
		t.Errorf("list output entities = %+v", e)
	}
	// prior.<type>.id reads the id with the type the value gave it.
	for _, tt := range []struct{ value, id, idJSON, attr string }{
		{`{"spaceId":42}`, "42", "42", "42"},
		{`{"spaceId":"42"}`, "42", "", `"42"`},
		{`{"spaceId":true}`, "true", "true", "true"},
		{`{"spaceId":4.50}`, "4.5", "4.50", "4.50"},
	} {
		e := c.Outputs["spaces"].Entity.Entities([]byte(tt.value))
		if len(e) != 1 || e[0].ID != tt.id || string(e[0].IDJSON) != tt.idJSON || e[0].attr("id").Raw != tt.attr {
			t.Errorf("entities of %s = %+v, want id %q, idJSON %q, attr %s", tt.value, e, tt.id, tt.idJSON, tt.attr)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := Backoff{InitialMs: 1000, Multiplier: 2, MaxMs: 4000}
	var got []int64
	for n := 1; n <= 5; n++ {
		got = append(got, b.Delay(n))
	}
	if fmt.Sprint(got) != "[0 1000 2000 4000 4000]" {
		t.Errorf("delays = %v (TOOL_USE_RELIABILITY §3.1: 1s, 2s, 4s)", got)
	}
}
