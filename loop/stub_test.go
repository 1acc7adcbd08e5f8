package loop

import (
	"testing"

	"github.com/agentwarden/warden/abi"
)

// TestStubOf: a compacted result keeps the evidence id of ToolMessage's
// evidence line only, never an "[ev:…]" found elsewhere in the content.
func TestStubOf(t *testing.T) {
	t.Parallel()
	const zhStub = `（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文；证据 ID：ev_1（引用写作 [ev:ev_1]），需要时用 builtin_evidence_get {"evidenceId":"ev_1"} 重新读取`
	tests := []struct {
		name, content string
		locale        abi.Locale
		want          string
	}{
		{name: "the evidence line",
			content: "工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n{\"a\":1}",
			locale:  abi.LocaleZH, want: zhStub},
		{name: "a citation in the summary before the evidence line is not it",
			content: "工具 query_site 调用成功，沿用 [ev:ev_9]。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_1]）\n结果：有数据（success_with_data）\n{\"a\":1}",
			locale:  abi.LocaleZH, want: zhStub},
		{name: "a citation in the data only: no evidence",
			content: "工具 query_site 调用成功。\n结果：有数据（success_with_data）\n{\"note\":\"see [ev:ev_7]\"}",
			locale:  abi.LocaleZH, want: "（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文：工具 query_site 调用成功。"},
		{name: "a failure whose body cites evidence: no evidence",
			content: "业务失败：维护中。下一步：稍后重试\n工具返回：\n{\"msg\":\"[ev:ev_2]\"}",
			locale:  abi.LocaleZH, want: "（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文：业务失败：维护中。下一步：稍后重试"},
		{name: "a line shaped like the evidence line with two ids is not it",
			content: "工具 query_site 调用成功。\n证据 ID：ev_1（在完成说明中引用写作 [ev:ev_2]）",
			locale:  abi.LocaleZH, want: "（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文：工具 query_site 调用成功。"},
		{name: "English",
			content: "tool query_site succeeded.\nevidence id: ev_1 (cite it in the finish output as [ev:ev_1])\nresult: has data (success_with_data)\n{\"a\":\"[ev:ev_5]\"}",
			locale:  abi.LocaleEN,
			want:    `(compacted) this result of tool query_site was left out of the conversation to save context; evidence id: ev_1 (cite it as [ev:ev_1]); read it again with builtin_evidence_get {"evidenceId":"ev_1"} when needed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := stubOf(tt.content, "query_site", tt.locale); got != tt.want {
				t.Errorf("stubOf:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
