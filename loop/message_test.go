package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

func TestToolMessage(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	item := func(result string) *abi.EvidenceItem {
		return &abi.EvidenceItem{ID: "ev_1", Tool: "query_site", Status: abi.OutcomeSuccess, BusinessOK: true, Result: result}
	}
	data := `{"code":200, "data":{"sites":[{"id":"site_1","name":"官网"}]}}`
	empty := `{"code":200,"data":{"sites":[]}}`
	// Ten records of 30 bytes each: over a budget of 256, only some fit.
	var recs []string
	for i := range 10 {
		recs = append(recs, `{"id":"site_`+string(rune('0'+i))+`","name":"分站点名称"}`)
	}
	long := `{"code":200,"data":{"sites":[` + strings.Join(recs, ",") + `]}}`
	guardCutData := `{"truncated":true,"size":400,"limit":64,"evidenceId":"ev_1","head":"{\"code\":200,\"data\":{\"si"}`
	png := strings.Repeat("QUJD", 300) // 1200 base64 bytes, 900 decoded
	biz := abi.Failed(abi.ToolBusinessFailed, "业务失败：标题已被占用", abi.NextBusiness.Text(abi.LocaleZH), raw(`{"code":40901,"msg":"标题已被占用","detail":{"field":"title"}}`))
	tool := abi.Failed(abi.MCPToolError, "MCP 工具 publish 返回错误：正文为空", abi.NextBusiness.Text(abi.LocaleZH), raw(`"正文为空"`))
	tests := []struct {
		name string
		in   ToolMessageInput
		want string
	}{
		{"success with data", ToolMessageInput{Observation: abi.Success("工具 query_site 调用成功", raw(data)), Evidence: item(abi.ResultWithData)},
			"工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n" +
				`{"code":200,"data":{"sites":[{"id":"site_1","name":"官网"}]}}`},
		{"success empty says so", ToolMessageInput{Observation: abi.Success("工具 query_site 调用成功", raw(empty)), Evidence: item(abi.ResultEmpty)},
			"工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：为空（success_empty）：调用成功，但在当前条件下没有匹配的数据；这不是失败，不要编造数据\n" + empty},
		{"the evidence item decides, not the payload's look", ToolMessageInput{Observation: abi.Success("工具 query_site 调用成功", raw(data)), Evidence: item(abi.ResultEmpty)},
			"工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：为空（success_empty）：调用成功，但在当前条件下没有匹配的数据；这不是失败，不要编造数据\n" +
				`{"code":200,"data":{"sites":[{"id":"site_1","name":"官网"}]}}`},
		{"en", ToolMessageInput{Observation: abi.Success("tool query_site succeeded", raw(empty)), Evidence: item(abi.ResultEmpty), Locale: abi.LocaleEN},
			"tool query_site succeeded.\nevidence id: ev_1 (cite it in the finish output as [ev:ev_1])\nresult: empty (success_empty): the call succeeded and nothing matches these conditions; this is not a failure, do not make data up\n" + empty},
		{"a builtin without data is its summary", ToolMessageInput{Observation: abi.Success("节点已完成", nil)}, "节点已完成。"},
		{"a builtin's data is shown without evidence", ToolMessageInput{Observation: abi.Success("会话信息", raw(`{"sessionId": "s1"}`))},
			"会话信息。\n结果：有数据（success_with_data）\n" + `{"sessionId":"s1"}`},
		{"over the budget: cut on a JSON boundary", ToolMessageInput{Observation: abi.Success("工具 query_site 调用成功", raw(long)), Evidence: item(abi.ResultWithData), Budget: 256},
			"工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n" +
				`结果共 ` + itoa(len(long)) + ` 字节，超过 256 字节的预算，下面的 JSON 已按结构截断（truncated: true），末尾的成员或元素被省略；完整结果用 builtin_evidence_get 读取：{"evidenceId":"ev_1","page":1}，再按返回的 nextPage 翻页` + "\n" +
				`{"code":200,"data":{"sites":[` + strings.Join(recs[:5], ",") + `]}}`},
		{"no budget: a builtin's answer is shown whole", ToolMessageInput{Observation: abi.Success("证据 ev_1 的原始报文，第 2/3 页", raw(long))},
			"证据 ev_1 的原始报文，第 2/3 页。\n结果：有数据（success_with_data）\n" + long},
		{"cut by the Evidence guard: rendered from the whole response", ToolMessageInput{
			Observation: abi.Success("工具 query_site 调用成功；返回内容共 400 字节，超过 64 字节上限，这里只给出前 64 字节（truncated: true）；完整内容已登记为证据 ev_1，用 builtin_evidence_get 分页读取其余部分", raw(guardCutData)),
			Evidence:    item(abi.ResultWithData), Response: raw(data)},
			"工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n" +
				`{"code":200,"data":{"sites":[{"id":"site_1","name":"官网"}]}}`},
		{"no base64 reaches the model", ToolMessageInput{Observation: abi.Success("工具 snap 调用成功",
			raw(`{"content":[{"type":"text","text":"截图如下"},{"type":"image","data":"`+png+`","mimeType":"image/png"},`+
				`{"type":"resource","resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":"`+png+`"}},`+
				`{"type":"resource_link","uri":"file:///b.txt","name":"b"}]}`)), Evidence: item(abi.ResultWithData)},
			"工具 snap 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n" +
				`{"content":[{"type":"text","text":"截图如下"},{"type":"image","data":"[image，image/png，900 字节，未显示；原始内容在证据 ev_1]","mimeType":"image/png"},` +
				`{"type":"resource","resource":{"uri":"file:///a.pdf","mimeType":"application/pdf","blob":"[resource，application/pdf，900 字节，未显示；原始内容在证据 ev_1]"}},` +
				`{"type":"resource_link","uri":"file:///b.txt","name":"b"}]}`},
		{"audio, en", ToolMessageInput{Observation: abi.Success("tool say succeeded", raw(`[{"type":"audio","mimeType":"audio/wav","data":"QUJDRA=="}]`)), Locale: abi.LocaleEN},
			"tool say succeeded.\nresult: has data (success_with_data)\n" + `[{"type":"audio","mimeType":"audio/wav","data":"[audio, audio/wav, 4 bytes, not shown; the raw content is in evidence ]"}]`},
		{"a business failure keeps the downstream body", ToolMessageInput{Observation: biz, Evidence: &abi.EvidenceItem{ID: "ev_2", Result: abi.ResultFailure}},
			"业务失败：标题已被占用。下一步：" + abi.NextBusiness.Text(abi.LocaleZH) + "\n工具返回：\n" + `{"code":40901,"msg":"标题已被占用","detail":{"field":"title"}}`},
		{"a tool error already in the reason is not repeated", ToolMessageInput{Observation: tool},
			"MCP 工具 publish 返回错误：正文为空。下一步：" + abi.NextBusiness.Text(abi.LocaleZH)},
		{"a rejection is reason and next step", ToolMessageInput{Observation: abi.Rejected(abi.CatalogDenied, "工具 x 不在本节点可调用范围内", abi.NextCatalog.Text(abi.LocaleZH))},
			"工具 x 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"},
		{"a deferral, en", ToolMessageInput{Observation: func() abi.Observation {
			o := abi.Deferred(abi.ApprovalRequired, abi.ApprovalRequired.Reason(abi.LocaleEN), abi.NextApproval.Text(abi.LocaleEN, "tool", "create_site"))
			o.Locale = abi.LocaleEN
			return o
		}()}, "this write must be confirmed by the user. Next: ask the user to confirm with builtin_node_approval, toolName create_site"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ToolMessage(tt.in); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestToolMessageBoundsAFailureBody(t *testing.T) {
	t.Parallel()
	body := `{"code":500,"msg":"` + strings.Repeat("错", 1000) + `"}`
	o := abi.Failed(abi.ToolBusinessFailed, "业务失败：服务异常", abi.NextBusiness.Text(abi.LocaleZH), json.RawMessage(body))
	got := ToolMessage(ToolMessageInput{Observation: o})
	_, shown, ok := strings.Cut(got, "工具返回：\n")
	if !ok || len(shown) > failureBudget || !json.Valid([]byte(shown)) || !strings.HasPrefix(shown, `{"code":500,"msg":"错错`) || !strings.HasSuffix(shown, `…"}`) {
		t.Fatalf("body shown %d bytes: %q", len(shown), shown)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCutJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		budget   int
		want     string
		cut      bool
	}{
		{"fits", `{"a":1,"b":[1,2,3]}`, 100, `{"a":1,"b":[1,2,3]}`, false},
		{"exactly the budget", `[1,2,3]`, 7, `[1,2,3]`, false},
		{"array elements dropped from the end", `[1,2,3,4,5]`, 6, `[1,2]`, true},
		{"a long string is shortened", `{"a":"hello world","b":2}`, 14, `{"a":"hel…"}`, true},
		{"members dropped, structure kept", `{"data":{"items":[{"id":1},{"id":2},{"id":3}],"total":3},"msg":"ok"}`, 40, `{"data":{"items":[{"id":1},{"id":2}]}}`, true},
		{"a member whose key does not fit is dropped", `{"a":1,"bbbbbbbbbb":2}`, 12, `{"a":1}`, true},
		{"characters are not split", `["长长长长长"]`, 14, `["长长…"]`, true},
		{"nothing fits but the mark", `"abcdefgh"`, 6, `"a…"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, cut := cutJSON([]byte(tt.in), tt.budget)
			if string(got) != tt.want || cut != tt.cut {
				t.Fatalf("cutJSON(%s, %d) = %s, %v; want %s, %v", tt.in, tt.budget, got, cut, tt.want, tt.cut)
			}
			if !json.Valid(got) || len(got) > tt.budget {
				t.Fatalf("cutJSON(%s, %d) = %s: %d bytes, valid %v", tt.in, tt.budget, got, len(got), json.Valid(got))
			}
		})
	}
}

// Every cut of a nested document is valid JSON within its budget, and a
// prefix of the document's structure.
func TestCutJSONAlwaysValid(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"code":200,"data":{"list":[{"id":"a1","tags":["x","y"],"n":1.5,"ok":true,"none":null},{"id":"a2","name":"名称很长的一条记录","nested":{"deep":[[1,2],[3,4]]}}],"total":2},"msg":"ok"}`)
	for budget := 5; budget <= len(doc); budget++ {
		got, cut := cutJSON(doc, budget)
		if !json.Valid(got) || len(got) > budget || cut != (budget < len(doc)) {
			t.Fatalf("budget %d: %s (%d bytes, cut %v)", budget, got, len(got), cut)
		}
	}
}
