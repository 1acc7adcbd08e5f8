package services

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

func TestContractArgShape(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, req, want string }{
		{"object", `{"args":{"a":1}}`, "O"},
		{"absent", `{"tool":"t"}`, "A"},
		{"array", `{"args":[1]}`, "Tarray"},
		{"string", `{"args":"x"}`, "Tstring"},
		{"boolean", `{"args":true}`, "Tboolean"},
		{"null", `{"args":null}`, "Tnull"},
		{"number", `{"args":3}`, "Tnumber"},
		{"syntax error points at the byte", `{"argsText":"{\"a\":tru}"}`, "J1\x1f9\x1finvalid character '}' in literal true (expecting 'e')"},
		{"second line", `{"argsText":"{\n  x}"}`, "J2\x1f3\x1finvalid character 'x' looking for beginning of object key string"},
		{"early end points past it", `{"argsText":"{\"a\":"}`, "J1\x1f6\x1funexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Call("contract.argshape", []byte(tt.req), nil)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

const ctState = `"state":{"state.node":{"shared":{"spaceId":"S2"},"outputs":{"draftId":{"value":"D-9","sourceType":"EVIDENCE"}}},` +
	`"state.entities":{"entities":[{"type":"customer","id":"C1","name":"Acme","attrs":{"taxNo":"TX1"}}]},` +
	`"state.evidence":{"items":[{"id":"ev-1","status":"SUCCESS","businessOk":true,"extracts":{"tags":[{"id":"t1"}]}}]},` +
	`"state.conversation":{"userMessages":["标题：Ｑ３ 报告"]},"state.followup":{"current":{"expectedFields":["buyer"]}}}`

func TestContractBind(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, req, want string }{
		{"bindings", `{"args":{"a":1},"contract":{"args":{"spaceId":{"from":"shared.spaceId"},"c":{"const":"CNY"},"tag":{"from":"evidence.tags.0.id"}}},` + ctState + `}`,
			`{"a":1,"c":"CNY","spaceId":"S2","tag":"t1"}` + "\x00" +
				"c\x1fCONTRACT\x1fconst\x1espaceId\x1fSHARED\x1fshared.spaceId\x1etag\x1fEVIDENCE\x1fevidence.tags.0.id@ev-1"},
		{"bound arguments are the base", `{"args":{"a":1},"bound":{"b":2},"contract":{"args":{"c":{"const":1}}}}`, `{"b":2,"c":1}` + "\x00c\x1fCONTRACT\x1fconst"},
		{"nothing bound", `{"args":{"a":1},"contract":{"args":{"spaceId":{"from":"shared.absent"}}},` + ctState + `}`, ""},
		{"no contract", `{"args":{"a":1}}`, ""},
		{"invalid contract", `{"args":{"a":1},"contract":{"args":{"x":{"from":"nowhere.x"}}}}`, ""},
		{"not an object", `{"args":[1],"contract":{"args":{"c":{"const":1}}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Call("contract.bind", []byte(tt.req), nil)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

func TestContractToolCache(t *testing.T) {
	t.Parallel()
	req := []byte(`{"contract":{"args":{"cached":{"const":1}}}}`)
	a, err := ctTool(req)
	if err != nil || a == nil {
		t.Fatal(err)
	}
	b, _ := ctTool([]byte(`{"callId":"another call","contract":{"args":{"cached":{"const":1}}}}`))
	if a != b {
		t.Fatal("the same contract text was parsed twice")
	}
}

func TestContractProvenance(t *testing.T) {
	t.Parallel()
	req := `{"args":{"title":"q3报告","buyer":"x","tag":"t1","draftId":"D-9","spaceId":"S2","currency":"GBP","lines":[{"n":1},{"n":""}]},` +
		`"provenance":{"spaceId":"SHARED"},"contract":{"args":{"title":{"sources":["USER"],"label":"标题"},"buyer":{"sources":["USER"]},` +
		`"tag":{"sources":["SHARED","EVIDENCE"]},"draftId":{"sources":["NODE_OUTPUT"]},"spaceId":{"from":"shared.spaceId"},` +
		`"currency":{"sources":["MODEL"],"enum":["CNY","USD"]},"lines[].n":{"required":false,"missing":{"action":"FAIL","message":"m"}}}},` + ctState + `}`
	got, err := Call("contract.provenance", []byte(req), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"buyer|buyer|1|USER||1|1|ASK_USER|||0|1|0|",
		`currency|currency|1|MODEL||0|1|ASK_USER|||1|0|0|["CNY","USD"]`,
		"draftId|draftId|1|NODE_OUTPUT||1|1|ASK_USER|||0|0|0|",
		"lines[].n|lines[].n|0|||1|0|FAIL||m|0|0|0|",
		"spaceId|spaceId|1|SHARED||1|1|ASK_USER|||0|0|1|",
		"tag|tag|1|EVIDENCE|ev-1|1|1|ASK_USER|||0|0|0|",
		"title|标题|1|USER||1|1|ASK_USER|||0|1|0|",
	}
	recs := strings.Split(strings.ReplaceAll(string(got), "\x1f", "|"), "\x1e")
	if strings.Join(recs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(recs, "\n"), strings.Join(want, "\n"))
	}
}

func TestContractPriorPath(t *testing.T) {
	t.Parallel()
	c, _, err := contract.Parse("k", []byte(`{"tools":{"t":{"args":{"a":{"from":"prior.customer.taxNo","sources":["PRIOR_TASK"]},"b":{"sources":["PRIOR_TASK"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := newCtMatcher([]byte(`{` + ctState + `}`))
	tests := []struct {
		name, param, value, source, ref string
	}{
		{"from prior: that path's value", "a", `"TX1"`, "PRIOR_TASK", "customer:C1"},
		{"from prior: an entity id is not that path", "a", `"C1"`, "MODEL", ""},
		{"no from: an entity id", "b", `"C1"`, "PRIOR_TASK", "customer:C1"},
		{"no from: another value", "b", `"TX1"`, "MODEL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, ref := m.match(c.Tool("t").Args[tt.param], tt.param, tt.param, gjson.Parse(tt.value))
			if src != tt.source || ref != tt.ref {
				t.Fatalf("got %s %q, want %s %q", src, ref, tt.source, tt.ref)
			}
		})
	}
}

func TestContractNormalise(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Q3 Report", "q3report"},
		{"ＡＢＣ　Ｃｏｒｐ", "abccorp"},
		{" 标题：\tQ３ ", "标题:q3"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := ctNormalise(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestContractSame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b string
		want       bool
	}{
		{"number and its text", `200`, `"200"`, true},
		{"strings", `"a"`, `"a"`, true},
		{"different strings", `"a"`, `"b"`, false},
		{"objects in any key order", `{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{"object and scalar", `{"a":1}`, `"{\"a\":1}"`, false},
		{"nulls are no value", `null`, `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ctSame(gjson.Parse(tt.a), gjson.Parse(tt.b)); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}
