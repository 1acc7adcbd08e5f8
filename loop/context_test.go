package loop

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
)

func TestCompact(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3000) // 1000 tokens
	result := func(ev string) string {
		return "工具 query_site 调用成功。\n证据 ID：" + ev + "（在完成说明中引用写作 [ev:" + ev + "]）\n结果：有数据（success_with_data）\n{\"blob\":\"" + big + "\"}"
	}
	asst := func(id, tool string) model.Message {
		return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: tool, Arguments: "{}"}}}
	}
	answer := func(id, content string) model.Message {
		return model.Message{Role: model.RoleTool, ToolCallID: id, Content: content}
	}
	user := model.Message{Role: model.RoleUser, Content: "建一个网站"}
	history := []model.Message{user,
		asst("c1", "query_site"), answer("c1", result("ev_1")),
		asst("c2", "query_space"), answer("c2", "业务失败：维护中。下一步：稍后重试\n工具返回：\n{\"code\":500,\"msg\":\""+big+"\"}"),
		asst("c3", "query_site"), answer("c3", result("ev_3")),
	}
	stub1 := `（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文；证据 ID：ev_1（引用写作 [ev:ev_1]），需要时用 builtin_evidence_get {"evidenceId":"ev_1"} 重新读取`
	stub2 := "（已压缩）工具 query_space 的这次结果已从对话中省略以节省上下文：业务失败：维护中。下一步：稍后重试"
	tests := []struct {
		name   string
		budget int
		n      int
		want   []string // the contents of the tool messages, in order
	}{
		{"within the budget nothing changes", 4000, 0, []string{result("ev_1"), history[4].Content, result("ev_3")}},
		{"the oldest result goes first", 2500, 1, []string{stub1, history[4].Content, result("ev_3")}},
		{"a result without evidence keeps its first line", 1500, 2, []string{stub1, stub2, result("ev_3")}},
		{"the latest turn stays whole, even over the budget", 100, 2, []string{stub1, stub2, result("ev_3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, n, total := Compact(history, tt.budget, abi.LocaleZH)
			if n != tt.n {
				t.Fatalf("compacted %d, want %d", n, tt.n)
			}
			var contents []string
			for i, m := range got {
				if m.Role != history[i].Role || m.ToolCallID != history[i].ToolCallID {
					t.Fatalf("message %d is %s/%s, want %s/%s", i, m.Role, m.ToolCallID, history[i].Role, history[i].ToolCallID)
				}
				if m.Role == model.RoleTool {
					contents = append(contents, m.Content)
				}
			}
			if strings.Join(contents, "\n--\n") != strings.Join(tt.want, "\n--\n") {
				t.Fatalf("tool messages:\n%s", strings.Join(contents, "\n--\n"))
			}
			sum := 0
			for _, m := range got {
				sum += messageTokens(m)
			}
			if sum != total || (tt.budget >= 1500 && total > tt.budget) {
				t.Fatalf("total %d, counted %d, budget %d", total, sum, tt.budget)
			}
			// The request is still well formed: every call answered.
			req := model.Request{Messages: got}
			if err := req.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if history[2].Content != result("ev_1") {
		t.Fatal("Compact changed its input")
	}
}

func TestFitCatalog(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("说明", 150) // 900 bytes
	tools := []model.Tool{{Name: "a", Description: long, Parameters: []byte(`{"type":"object"}`)}, {Name: "b", Description: "短"}}
	tests := []struct {
		name        string
		budget      int
		catalog     string
		descs       []string
		wantCatalog string
		did         []string
	}{
		{"within the budget", 1000, "目录", []string{long, "短"}, "目录", nil},
		// 200 bytes: 30 of the 6-byte 说明 and the 18-byte mark.
		{"descriptions shortened first", 200, "目录", []string{strings.Repeat("说明", 30) + "…（已截断）", "短"}, "目录", []string{"tool descriptions to 200 bytes"}},
		{"then removed, then the catalogue cut", 30, "目录" + strings.Repeat("条目", 30), []string{"", ""}, "目录条目条目条目…（已截断）",
			[]string{"tool descriptions to 200 bytes", "tool descriptions to 80 bytes", "tool descriptions to 0 bytes", "catalogue section"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, cat, did := FitCatalog(tools, tt.catalog, tt.budget, abi.LocaleZH)
			var descs []string
			for _, d := range got {
				descs = append(descs, d.Description)
			}
			if strings.Join(descs, "|") != strings.Join(tt.descs, "|") || cat != tt.wantCatalog || strings.Join(did, ",") != strings.Join(tt.did, ",") {
				t.Fatalf("descriptions %q, catalog %q, did %q", descs, cat, did)
			}
			if len(got) != len(tools) || tools[0].Description != long {
				t.Fatal("a tool was dropped or the input changed")
			}
		})
	}
}

func TestFitPrompt(t *testing.T) {
	t.Parallel()
	manual := strings.Repeat("手册", 1000) // 6000 bytes
	in := PromptInput{Locale: abi.LocaleZH, Manual: manual, Agent: contract.AgentProfile{IdentityDesc: "你是建站助手"}, Phase: "尚未写入的必填产出：siteId",
		Catalog: strings.Repeat("c", 30000)}
	t.Run("within the budget", func(t *testing.T) {
		t.Parallel()
		got, did := FitPrompt(in, 4096)
		if got.Manual != manual || did != nil {
			t.Fatalf("did %v", did)
		}
	})
	t.Run("the longest text is shortened, the loop's own texts stay", func(t *testing.T) {
		t.Parallel()
		got, did := FitPrompt(in, 1000)
		p := got
		p.Catalog = ""
		if n := EstimateTokens(NodePrompt(p)); n > 1000 {
			t.Fatalf("prompt of %d tokens", n)
		}
		if strings.Join(did, ",") != "manual" || !strings.HasSuffix(got.Manual, "…（已截断）") || got.Agent.IdentityDesc != "你是建站助手" ||
			got.Phase != in.Phase || got.Catalog != in.Catalog {
			t.Fatalf("did %v, input %+v", did, got.Agent)
		}
		if !strings.Contains(NodePrompt(got), ReactPrompt(abi.LocaleZH)) {
			t.Fatal("the rules were cut")
		}
	})
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "a": 1, "abc": 1, "abcd": 2, "中文": 2} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	}
}
