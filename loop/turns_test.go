package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/loop"
)

// shaped gives the n-th turn (1-based) of the model it wraps the finish
// reason, refusal or usage a provider would.
type shaped struct {
	model.Model
	mu    sync.Mutex
	n     int
	shape map[int]func(*model.Response)
}

func (s *shaped) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := s.Model.Complete(ctx, req)
	s.mu.Lock()
	s.n++
	f := s.shape[s.n]
	s.mu.Unlock()
	if err == nil && f != nil {
		f(&resp)
	}
	return resp, err
}

func (h *harness) shape(turns map[int]func(*model.Response)) {
	h.model.Model = &shaped{Model: h.model.Model, shape: turns}
}

func (h *harness) events(kind loop.Kind) []loop.Event {
	var out []loop.Event
	for _, e := range h.trace.Events() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A turn cut by the length limit counts as a text turn without progress
// (TOOL_OBSERVATION §6), and its tool calls, which may be half-formed, do
// not run: each is answered MODEL_OUTPUT_TRUNCATED. A refusal counts the
// same way. Both are REACT events of their own.
func TestLengthAndRefusalTurns(t *testing.T) {
	t.Parallel()
	cut := "模型输出达到长度上限被截断，本轮的工具调用未执行。下一步：重新发出完整的调用；参数或说明过长时先缩短"
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`), call("create_site", `{"title":"Spring`)),
		{Text: "抱歉"},
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_fail", `{"reason":"模型无法继续"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}}})
	h.shape(map[int]func(*model.Response){
		1: func(r *model.Response) { r.FinishReason = model.FinishLength },
		2: func(r *model.Response) { r.Message.Content, r.Refusal = "", "I can't help with that." },
	})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	h.wantTools("query_space SKIPPED", "create_site SKIPPED", "query_space SUCCESS stalls=0", "builtin_node_fail SUCCESS stalls=0")
	if got := h.tools.called(); len(got) != 1 {
		t.Fatalf("calls of the cut turn ran: %v", got)
	}
	for n := 1; n <= 2; n++ {
		if got := h.toolMessage(1, n); got != cut {
			t.Fatalf("call %d of the cut turn read %q", n, got)
		}
	}
	var react []string
	for _, e := range h.events(loop.KindReact) {
		react = append(react, e.Status+" stalls="+itoa(e.Stalls)+" "+e.Level+": "+e.Message)
	}
	want := []string{
		"length stalls=1 WARN: 模型输出达到长度上限被截断",
		"refusal stalls=2 WARN: 模型拒绝回答：I can't help with that.",
	}
	if strings.Join(react, "\n") != strings.Join(want, "\n") {
		t.Fatalf("react events:\n%s", strings.Join(react, "\n"))
	}
	skipped := h.event(loop.KindTool, "create_site")
	if skipped.Outcome != "REJECTED" || skipped.Name != string(abi.ModelOutputTruncated) || skipped.Input != `{"title":"Spring` {
		t.Fatalf("skipped event %+v", skipped)
	}
	// The refusal stays in the conversation as what the model said.
	msgs, _ := h.store.Messages("n1")
	found := false
	for _, m := range msgs {
		found = found || (m.Role == model.RoleAssistant && m.Content == "I can't help with that.")
	}
	if !found {
		t.Fatal("the refusal is not in the conversation")
	}
}

// Every model turn whose provider reported usage has a MODEL event with
// it; a turn without usage has none.
func TestUsageEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("query_site", `{}`)),
		turn(call("builtin_node_fail", `{"reason":"x"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}, "query_site": {{body: sites}}}})
	h.shape(map[int]func(*model.Response){
		1: func(r *model.Response) {
			r.Usage = model.Usage{PromptTokens: 1200, CompletionTokens: 30, TotalTokens: 1230, CachedTokens: 1024}
		},
		3: func(r *model.Response) {
			r.Usage = model.Usage{PromptTokens: 1500, CompletionTokens: 12, TotalTokens: 1512}
		},
	})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	var got []string
	for _, e := range h.events(loop.KindModel) {
		got = append(got, e.Status+" "+e.Finish+" "+itoa(e.PromptTokens)+"/"+itoa(e.CompletionTokens)+"/"+itoa(e.CachedTokens))
	}
	if want := "usage tool_calls 1200/30/1024\nusage tool_calls 1500/12/0"; strings.Join(got, "\n") != want {
		t.Fatalf("model events:\n%s", strings.Join(got, "\n"))
	}
}

// The model's error reaches the caller wrapped, so that the server and
// the CLI can map its type.
func TestModelErrorWrapped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{{Fail: "upstream 503"}}})
	_, err := h.runner.Run(ctx, "n1")
	if !errors.Is(err, scripted.ErrScriptedFailure) || !strings.HasPrefix(err.Error(), "loop: node n1: model: ") {
		t.Fatalf("error %v", err)
	}
}

// A success reaches the model with its evidence id and its data; the
// trace event carries what was sent.
func TestSuccessMessageCarriesEvidenceAndData(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_fail", `{"reason":"x"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	e := h.event(loop.KindTool, "query_space")
	if !strings.HasPrefix(e.Evidence, "ev_") {
		t.Fatalf("event %+v", e)
	}
	want := "工具 query_space 调用成功。\n证据 ID：" + e.Evidence + "（在完成说明中引用写作 [ev:" + e.Evidence + "]）\n结果：有数据（success_with_data）\n" + spaces
	if got := h.toolMessage(1, 1); got != want || e.Sent != want || e.Message != "工具 query_space 调用成功" {
		t.Fatalf("model read\n%s\nevent sent\n%s\nmessage %q", got, e.Sent, e.Message)
	}
}

// When the history would overflow the context budget, the oldest tool
// results are sent as stubs with their evidence id; the store keeps them
// whole.
func TestHistoryCompactedInTheRequest(t *testing.T) {
	t.Parallel()
	big := `{"code":200,"data":{"sites":[{"id":"site_1","name":"` + strings.Repeat("官网", 2500) + `"}]}}`
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_site", `{}`)),
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_fail", `{"reason":"x"}`)),
	}, answers: map[string][]answer{"query_site": {{body: big}}, "query_space": {{body: spaces}}},
		config: func(c *loop.Config) {
			c.ToolResultBudget = 16000
			c.PromptTokens, c.CatalogTokens, c.ContextTokens = 1000, 6000, 7000
		}})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	ev := h.event(loop.KindTool, "query_site").Evidence
	last := h.model.reqs[len(h.model.reqs)-1].Messages
	var sent string
	for _, m := range last {
		if m.ToolCallID == "call_1_1" {
			sent = m.Content
		}
	}
	want := "（已压缩）工具 query_site 的这次结果已从对话中省略以节省上下文；证据 ID：" + ev + "（引用写作 [ev:" + ev + "]），需要时用 builtin_evidence_get {\"evidenceId\":\"" + ev + "\"} 重新读取"
	if sent != want {
		t.Fatalf("the old result was sent as %q", sent)
	}
	if stored := h.toolMessage(1, 1); !strings.Contains(stored, strings.Repeat("官网", 2500)) {
		t.Fatal("the store lost the whole result")
	}
	if got := h.toolMessage(2, 1); !strings.Contains(got, spaces) {
		t.Fatalf("the newest result was not sent whole: %q", got)
	}
	var ctxEvents []string
	for _, e := range h.events(loop.KindReact) {
		if e.Status == "context" {
			ctxEvents = append(ctxEvents, e.Message)
		}
	}
	// Turn 2: the big result is the newest and stays whole, over the
	// budget; turn 3: it is old and compacted.
	if len(ctxEvents) != 2 || !strings.HasSuffix(ctxEvents[0], "; still over the budget") ||
		!strings.HasSuffix(ctxEvents[1], "; 1 old tool results compacted") {
		t.Fatalf("context events %q", ctxEvents)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// The calls of a turn the process stopped during are answered, before the
// model reads on, with a FAILED observation built by the factories: a
// write waits for verification, a read may be called again.
func TestInterruptedCallsAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{turn(call("builtin_node_fail", `{"reason":"x"}`))}})
	must(t, h.store.AppendMessages("n1", model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
		{ID: "call_0_1", Name: "query_site", Arguments: `{}`}, {ID: "call_0_2", Name: "create_site", Arguments: `{"title":"Spring Launch"}`}}}))
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	want := map[string]string{
		"call_0_1": "调用工具 query_site 时发生 IO 异常：进程在调用返回前中断，没有返回结果。下一步：" + abi.NextRetryLater.Text(abi.LocaleZH),
		"call_0_2": "写操作 create_site 的结果尚待核实：进程在调用返回前中断，没有返回结果。下一步：" + abi.NextWaitVerify.Text(abi.LocaleZH),
	}
	got := map[string]string{}
	for _, m := range h.model.reqs[0].Messages {
		if m.Role == model.RoleTool {
			got[m.ToolCallID] = m.Content
		}
	}
	if len(got) != 2 || got["call_0_1"] != want["call_0_1"] || got["call_0_2"] != want["call_0_2"] {
		t.Fatalf("model read %q", got)
	}
}
