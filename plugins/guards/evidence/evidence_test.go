package evidence_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

const (
	search    = `{"success":{"path":"code","op":"EQ","value":0},"extracts":[{"key":"sites","path":"data.records","entity":{"type":"site"}},{"path":"data.total"}]}`
	save      = `{"sideEffect":"WRITE","success":{"path":"code","op":"EQ","value":0},"extracts":[{"key":"article","path":"data","entity":{"type":"article","name":"title","scalar":"id"}}]}`
	args      = `{"q":"cms","page":1}`
	canonArgs = `{"page":1,"q":"cms"}`
	retrieved = "2026-03-01T08:30:00Z"
)

var id = func() string { s := sha256.Sum256([]byte("call-1")); return "ev_" + hex.EncodeToString(s[:])[:16] }()

func hash(s string) string { x := sha256.Sum256([]byte(s)); return hex.EncodeToString(x[:]) }

type in struct {
	tool, contract, args, response, config string
	result                                 abi.Observation
	locale                                 abi.Locale
}

func (r in) request() []byte {
	tool, a := r.tool, r.args
	if tool == "" {
		tool = "search_site"
	}
	if a == "" {
		a = args
	}
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseAfter, Tool: tool, CallID: "call-1",
		Args: json.RawMessage(a), Bound: json.RawMessage(a), Contract: json.RawMessage(r.contract), Result: &r.result, Locale: r.locale}
	if r.response != "" {
		req.Response = json.RawMessage(r.response)
	}
	if r.config != "" {
		req.Config = json.RawMessage(r.config)
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

func ok(resp string) abi.Observation { return abi.Success("调用成功", json.RawMessage(resp)) }

func register(it abi.EvidenceItem) string {
	it.ID, it.RetrievedAt, it.ToolCallID = id, retrieved, "call-1"
	if it.Tool == "" {
		it.Tool, it.Locator = "search_site", "search_site "+canonArgs
	}
	if it.SourceType == "" {
		it.SourceType = "query"
	}
	b, err := json.Marshal(it)
	if err != nil {
		panic(err)
	}
	return abi.EffectEvidenceRegister + " " + string(b)
}

func entity(e string) string { return abi.EffectEntityRecord + " " + e }

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// TestEvidence has one row per case of FAILURES_AND_EVIDENCE §1/§6 (the
// three result kinds), CONTRACT_SPEC §6.3 (extracts, counts, empty,
// entities, the write merge rule) and TOOL_OBSERVATION §5 (only executed
// calls). Every row runs natively and as wasm with identical verdicts and
// effects.
func TestEvidence(t *testing.T) {
	t.Parallel()
	data := `{"code":0,"data":{"records":[{"id":"s1","name":"官网","lang":"zh"},{"id":"s2","name":"Docs"}],"total":2}}`
	empty := `{"code":0,"data":{"records":[]}}`
	bizFail := `{"code":500,"msg":"db down"}`
	big := `{"code":0,"data":{"records":[]},"blob":"` + strings.Repeat("長", 40) + `"}`
	timeout := abi.Failed(abi.ToolTimeout, "工具 search_site 在 30s 内没有返回", abi.NextTimeout.Text(""))
	business := abi.Failed(abi.ToolBusinessFailed, "业务失败：db down", abi.NextBusiness.Text(""), raw(bizFail))
	cases := []struct {
		name    string
		in      in
		want    string
		effects []string
	}{
		{"rejected calls have no evidence", in{contract: search, result: abi.Rejected(abi.FingerprintTrip, "x", "y")}, "PASS", nil},
		{"deferred calls have no evidence", in{contract: search, result: abi.Deferred(abi.ApprovalRequired, "x", "y")}, "PASS", nil},
		{"success with data", in{contract: search, response: data, result: ok(data)}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: data, ContentHash: hash(data), Status: abi.OutcomeSuccess, BusinessOK: true,
				Result: abi.ResultWithData, Size: len(data), Payload: raw(data),
				Extracts: map[string]json.RawMessage{"sites": raw(`[{"id":"s1","name":"官网","lang":"zh"},{"id":"s2","name":"Docs"}]`), "data.total": raw("2")},
				Counts:   map[string]int{"sites": 2, "data.total": 1}, Values: []string{"s1", "官网", "zh", "s2", "Docs", "2"}}),
			entity(`{"type":"site","id":"s1","name":"官网","attrs":{"lang":"zh"}}`),
			entity(`{"type":"site","id":"s2","name":"Docs"}`),
		}},
		{"success empty is not a failure", in{contract: search, response: empty, result: ok(empty)}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: empty, ContentHash: hash(empty), Status: abi.OutcomeSuccess, BusinessOK: true,
				Result: abi.ResultEmpty, Empty: true, Size: len(empty), Payload: raw(empty),
				Extracts: map[string]json.RawMessage{"sites": raw(`[]`)}, Counts: map[string]int{"sites": 0, "data.total": 0}}),
		}},
		{"no extracts: empty by shape", in{response: `[]`, result: ok(`[]`)}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: "[]", ContentHash: hash("[]"), Status: abi.OutcomeSuccess, BusinessOK: true,
				Result: abi.ResultEmpty, Empty: true, Size: 2, Payload: raw(`[]`)}),
		}},
		{"no extracts: data by shape", in{response: `{"n":1}`, result: ok(`{"n":1}`)}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: `{"n":1}`, ContentHash: hash(`{"n":1}`), Status: abi.OutcomeSuccess, BusinessOK: true,
				Result: abi.ResultWithData, Size: 7, Payload: raw(`{"n":1}`)}),
		}},
		{"call-layer failure is a failure, never empty", in{contract: search, result: timeout}, "PASS", []string{
			register(abi.EvidenceItem{Status: abi.OutcomeFailed, Result: abi.ResultFailure}),
		}},
		{"business failure reported by ResponseContract", in{contract: search, response: bizFail, result: business}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: bizFail, ContentHash: hash(bizFail), Status: abi.OutcomeSuccess, Result: abi.ResultFailure, Size: len(bizFail), Payload: raw(bizFail)}),
		}},
		{"business failure judged here", in{contract: search, response: bizFail, result: ok(bizFail)}, "PASS", []string{
			register(abi.EvidenceItem{Excerpt: bizFail, ContentHash: hash(bizFail), Status: abi.OutcomeSuccess, Result: abi.ResultFailure, Size: len(bizFail), Payload: raw(bizFail)}),
		}},
		{"write entity merges the arguments", in{tool: "save_article", contract: save, args: `{"title":"Q3","spaceId":7}`, response: `{"code":0,"data":"a-9"}`, result: ok(`{"code":0,"data":"a-9"}`)}, "PASS", []string{
			register(abi.EvidenceItem{Tool: "save_article", Locator: `save_article {"spaceId":7,"title":"Q3"}`, Excerpt: `{"code":0,"data":"a-9"}`,
				ContentHash: hash(`{"code":0,"data":"a-9"}`), Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData, Size: 23,
				Payload: raw(`{"code":0,"data":"a-9"}`), Extracts: map[string]json.RawMessage{"article": raw(`"a-9"`)}, Counts: map[string]int{"article": 1}, Values: []string{"a-9"}}),
			entity(`{"type":"article","id":"a-9","name":"Q3","attrs":{"spaceId":7}}`),
		}},
		{"configured source type", in{tool: "fetch_page", args: `{}`, config: `{"sourceTypes":{"fetch_page":"url"}}`, response: `"page text"`, result: ok(`"page text"`)}, "PASS", []string{
			register(abi.EvidenceItem{Tool: "fetch_page", SourceType: "url", Locator: "fetch_page {}", Excerpt: `"page text"`, ContentHash: hash(`"page text"`),
				Status: abi.OutcomeSuccess, BusinessOK: true, Result: abi.ResultWithData, Size: 11, Payload: raw(`"page text"`)}),
		}},
	}
	// Truncation: a 64-byte budget.
	cut := func(s string) string { return truncate(s, 64) }
	headJSON, _ := json.Marshal(cut(big))
	bigItem := abi.EvidenceItem{Excerpt: truncate200(big), ContentHash: hash(big), Status: abi.OutcomeSuccess, BusinessOK: true,
		Result: abi.ResultEmpty, Empty: true, Truncated: true, Size: len(big), Payload: headJSON,
		Extracts: map[string]json.RawMessage{"sites": raw(`[]`)}, Counts: map[string]int{"sites": 0, "data.total": 0}}
	size := strconv.Itoa(len(big))
	note := "返回内容共 " + size + " 字节，超过 64 字节上限，这里只给出前 64 字节（truncated: true）；完整内容已登记为证据 " + id + "，用 builtin_evidence_get 分页读取其余部分"
	cases = append(cases, []struct {
		name    string
		in      in
		want    string
		effects []string
	}{
		{"oversized success is truncated with a note", in{contract: search, config: `{"maxPayloadBytes":64}`, response: big, result: ok(big)},
			"SUCCESS: 调用成功；" + note, []string{register(bigItem)}},
		{"oversized success en", in{contract: search, config: `{"maxPayloadBytes":64}`, response: big, result: ok(big), locale: abi.LocaleEN},
			"SUCCESS: 调用成功; the response has " + size + " bytes, over the 64-byte limit, so only the first 64 bytes are shown (truncated: true); the whole response is evidence " + id + ", read the rest page by page with builtin_evidence_get",
			[]string{register(bigItem)}},
		{"oversized failure keeps outcome, code and next", in{contract: search, config: `{"maxPayloadBytes":64}`, response: big,
			result: abi.Failed(abi.ToolBusinessFailed, "业务失败：x", abi.NextBusiness.Text(""), raw(big))},
			"FAILED TOOL_BUSINESS_FAILED: 业务失败：x；" + note + "。下一步：" + abi.NextBusiness.Text(""),
			[]string{register(abi.EvidenceItem{Excerpt: truncate200(big), ContentHash: hash(big), Status: abi.OutcomeSuccess, Result: abi.ResultFailure, Truncated: true, Size: len(big), Payload: headJSON})}},
	}...)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := both(t, tt.in.request())
			if got := describe(v, tt.in.locale); got != tt.want {
				t.Errorf("verdict:\n got %s\nwant %s", got, tt.want)
			}
			if got := effects(v); !slices.Equal(got, tt.effects) {
				t.Errorf("effects:\n got %q\nwant %q", got, tt.effects)
			}
			if v.Observation != nil {
				want := `{"truncated":true,"size":` + size + `,"limit":64,"evidenceId":"` + id + `","head":` + string(headJSON) + `}`
				if string(v.Observation.Data) != want {
					t.Errorf("data:\n got %s\nwant %s", v.Observation.Data, want)
				}
			}
		})
	}
}

// truncate200 is the excerpt of a response: its first 200 bytes on a UTF-8
// boundary, marked with "…".
func truncate200(s string) string { return truncate(s, 200) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
