package paramcontract

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

const state = `"state":{"state.node":{"shared":{"spaceId":"S2"},"outputs":{"draftId":{"value":"D-9","sourceType":"EVIDENCE"}}},` +
	`"state.entities":{"entities":[{"type":"customer","id":"C1","name":"Acme","attrs":{"taxNo":"TX1"}}]},` +
	`"state.evidence":{"items":[{"id":"ev-1","status":"SUCCESS","businessOk":true,"extracts":{"tags":[{"id":"t1"}]}}]},` +
	`"state.conversation":{"userMessages":["标题：Ｑ３ 报告"]},"state.followup":{"current":{"expectedFields":["buyer"]}}}`

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// row prints a param in the field order of the former host service, so the
// expectations kept their shape.
func (p param) row() string {
	return strings.Join([]string{p.path, p.name, flag(p.present), p.source, p.ref, flag(p.enumOK), flag(p.required),
		p.action, p.tool, p.message, flag(p.modelOK), flag(p.userOK), flag(p.bound), p.enum}, "|")
}

func TestProvenance(t *testing.T) {
	t.Parallel()
	req := `{"args":{"title":"q3报告","buyer":"x","tag":"t1","draftId":"D-9","spaceId":"S2","currency":"GBP","lines":[{"n":1},{"n":""}]},` +
		`"provenance":{"spaceId":"SHARED"},"contract":{"args":{"title":{"sources":["USER"],"label":"标题"},"buyer":{"sources":["USER"]},` +
		`"tag":{"sources":["SHARED","EVIDENCE"]},"draftId":{"sources":["NODE_OUTPUT"]},"spaceId":{"from":"shared.spaceId"},` +
		`"currency":{"sources":["MODEL"],"enum":["CNY","USD"]},"lines[].n":{"required":false,"missing":{"action":"FAIL","message":"m"}}}},` + state + `}`
	g := &guard{normalise: Normalise}
	ps, err := g.provenance(envelope.Bytes(req))
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
	got := make([]string, len(ps))
	for i, p := range ps {
		got[i] = p.row()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProvenanceNormalisation(t *testing.T) {
	t.Parallel()
	req := []byte(`{"args":{"title":"q3报告"},"contract":{"args":{"title":{"sources":["USER"]}}},` + state + `}`)
	tests := []struct {
		name      string
		normalise func(string) string
		source    string
	}{
		{"default folds width and case", Normalise, "USER"},
		{"exact text does not", func(s string) string { return s }, "MODEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps, err := (&guard{normalise: tt.normalise}).provenance(envelope.Bytes(req))
			if err != nil || len(ps) != 1 || ps[0].source != tt.source {
				t.Fatalf("got %+v, %v; want source %s", ps, err, tt.source)
			}
		})
	}
}

func TestPriorPath(t *testing.T) {
	t.Parallel()
	c, _, err := contract.Parse("k", []byte(`{"tools":{"t":{"args":{"a":{"from":"prior.customer.taxNo","sources":["PRIOR_TASK"]},"b":{"sources":["PRIOR_TASK"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := (&guard{normalise: Normalise}).newMatcher(envelope.Bytes(`{` + state + `}`))
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

func TestNormalise(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Q3 Report", "q3report"},
		{"ＡＢＣ　Ｃｏｒｐ", "abccorp"},
		{" 标题：\tQ３ ", "标题:q3"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := Normalise(tt.in); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	// Every ASCII byte as the unicode tables treat it.
	for c := range rune(utf8.RuneSelf) {
		want := ""
		if !unicode.IsSpace(c) {
			want = string(unicode.ToLower(c))
		}
		if got := Normalise(string(c)); got != want {
			t.Errorf("Normalise(%q) = %q, want %q", c, got, want)
		}
	}
}
