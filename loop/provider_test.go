package loop_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// nudge is what the model reads after a turn without a tool call.
const nudge = "上一轮只有文字，没有调用工具；本节点只通过工具调用推进。下一步：调用本节点工具目录中的工具继续；需要用户补充信息时调用 builtin_node_follow_up；已完成时调用 builtin_node_finish；无法完成时调用 builtin_node_fail 说明原因"

// withProvider runs the harness's node against a fake OpenAI-compatible
// provider through the real client instead of the scripted model.
func withProvider(t *testing.T, h *harness, prov *fakeprovider.Server) {
	t.Helper()
	cfg := openai.Defaults(prov.BaseURL(), "", "gpt-test")
	cfg.MaxRetries = 0
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.model.Model = m
}

// lastMessage is the role and content of the last message of a request
// the provider received.
func lastMessage(t *testing.T, r fakeprovider.Request) (string, string) {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil || len(body.Messages) == 0 {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	m := body.Messages[len(body.Messages)-1]
	if m.Content == nil {
		return m.Role, ""
	}
	return m.Role, *m.Content
}

// A chatty model on a provider that refuses a conversation ending with
// the assistant's message (Mistral): each text-only turn is answered with
// a user message saying what is expected, so the next request ends with
// it, the provider takes it, and the node goes on to DONE. Each text turn
// counts as no progress (TOOL_OBSERVATION §6) and the next request is not
// the same context replayed.
func TestChattyModelOnAStrictProvider(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{answers: map[string][]answer{"query_space": {{body: spaces}}}})
	prov := fakeprovider.New(t,
		fakeprovider.Text("好的，我来帮你建站。"),
		fakeprovider.Text("我先确认一下空间。"),
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "call_a", Name: "query_space", Arguments: `{"spaceName":"市场部"}`}}},
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "call_b", Name: "builtin_node_finish", Arguments: `{"output":"市场部空间 id 42"}`}}},
	)
	prov.RequireUserOrToolLast()
	withProvider(t, h, prov)
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Done {
		t.Fatalf("exit %+v", exit)
	}
	reqs := prov.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for i, want := range [][2]string{{"user", userAsk}, {"user", nudge}, {"user", nudge}, {"tool", ""}} {
		role, content := lastMessage(t, reqs[i])
		if role != want[0] || (want[1] != "" && content != want[1]) {
			t.Fatalf("request %d ends with %s %q, want %s %q", i+1, role, content, want[0], want[1])
		}
	}
	if reqs[1].Body == reqs[2].Body {
		t.Fatal("the second text turn was answered with the same context replayed")
	}
	var stalls []int
	for _, e := range h.events("REACT") {
		stalls = append(stalls, e.Stalls)
	}
	if len(stalls) != 2 || stalls[0] != 1 || stalls[1] != 2 {
		t.Fatalf("text turns counted %v, want [1 2]", stalls)
	}
	h.wantTools("query_space SUCCESS stalls=0", "builtin_node_finish SUCCESS stalls=0")
}

// Without the answer to a text turn, the same provider refuses the next
// request: the fake provider answers as Mistral does, which is what the
// test above relies on.
func TestStrictProviderRefusesAssistantLast(t *testing.T) {
	t.Parallel()
	prov := fakeprovider.New(t, fakeprovider.Text("unused"))
	prov.RequireUserOrToolLast()
	cfg := openai.Defaults(prov.BaseURL(), "", "gpt-test")
	cfg.MaxRetries = 0
	m, err := openai.New(cfg)
	must(t, err)
	_, err = m.Complete(ctx, model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}, {Role: model.RoleAssistant, Content: "hello"}}})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, model.ErrBadRequest) || pe.Status != 400 || pe.Code != "3230" ||
		!strings.Contains(pe.Message, "Expected last role User or Tool") {
		t.Fatalf("error %v", err)
	}
	if len(prov.Requests()) != 1 {
		t.Fatalf("%d requests", len(prov.Requests()))
	}
}

// A provider turn whose two calls share an id (one a write) is refused
// before either runs: the tools see no call, the model reads
// MODEL_TURN_INVALID naming the id and the calls, the turn counts once as
// no progress, and the next request is one the provider takes.
func TestDuplicateCallIDsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{answers: map[string][]answer{"query_space": {{body: spaces}}, "create_site": {{body: created}}},
		config: func(c *loop.Config) { c.Locale = abi.LocaleEN }})
	prov := fakeprovider.New(t,
		fakeprovider.Reply{Calls: []fakeprovider.Call{
			{ID: "call_x", Name: "query_space", Arguments: `{"spaceName":"市场部"}`},
			{ID: "call_x", Name: "create_site", Arguments: `{"title":"Spring Launch","spaceId":42}`},
		}},
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "call_y", Name: "query_space", Arguments: `{"spaceName":"市场部"}`}}},
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "call_z", Name: "builtin_node_finish", Arguments: `{"output":"space 42"}`}}},
	)
	withProvider(t, h, prov)
	exit, err := h.runner.Run(ctx, "n1")
	must(t, err)
	if exit.Status != state.Done {
		t.Fatalf("exit %+v", exit)
	}
	if got := h.tools.called(); len(got) != 1 || got[0] != `query_space {"spaceName":"市场部"}` {
		t.Fatalf("tools called %v, want only the second turn's query_space", got)
	}
	const refusal = `the tool calls of this turn are malformed, so none of them was run: call id "call_x" is used by 2 calls (query_space, create_site). Next: issue again the calls of this turn you still need, each with an id of its own`
	role, content := lastMessage(t, prov.Requests()[1])
	if role != "tool" || content != refusal {
		t.Fatalf("second request ends with %s %q", role, content)
	}
	h.wantTools("query_space SKIPPED", "query_space SUCCESS stalls=0", "builtin_node_finish SUCCESS stalls=0")
	if e := h.event(loop.KindReact, ""); e.Status != "invalid_turn" || e.Stalls != 1 || e.Level != "WARN" || e.Message != refusal {
		t.Fatalf("react event %+v", e)
	}
	if e := h.event(loop.KindTool, "query_space"); e.Name != string(abi.ModelTurnInvalid) || e.Outcome != "REJECTED" {
		t.Fatalf("tool event %+v", e)
	}
}

// A call without an id is refused the same way; with nothing of the turn
// left to keep, the refusal reaches the model as a user message and the
// empty assistant message is left out.
func TestCallWithoutIDRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("query_space", `{"spaceName":"市场部"}`)),
		turn(call("builtin_node_finish", `{"output":"市场部空间 id 42"}`)),
	}, answers: map[string][]answer{"query_space": {{body: spaces}}}})
	h.shape(map[int]func(*model.Response){1: func(r *model.Response) { r.Message.ToolCalls[0].ID = "" }})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	h.wantTools("query_space SUCCESS stalls=0", "builtin_node_finish SUCCESS stalls=0")
	const refusal = "本轮的工具调用不合规，其中任何调用都未执行：第 1 个调用（query_space）没有调用 id。下一步：重新发出本轮确实需要的调用，每个调用使用自己的调用 id"
	if e := h.event(loop.KindReact, ""); e.Status != "invalid_turn" || e.Stalls != 1 || e.Message != refusal {
		t.Fatalf("react event %+v", e)
	}
	msgs := h.model.reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleUser || last.Content != refusal || msgs[len(msgs)-2].Role != model.RoleUser {
		t.Fatalf("second request ends with %+v", msgs[len(msgs)-2:])
	}
}

// A text turn left unanswered by a process that stopped right after it is
// answered before the next request, which then ends with the user's
// message.
func TestUnansweredTextTurnAnsweredOnRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{turns: []scripted.Turn{turn(call("builtin_node_fail", `{"reason":"x"}`))}})
	must(t, h.store.AppendMessages("n1", model.Message{Role: model.RoleAssistant, Content: "让我想想。"}))
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	msgs := h.model.reqs[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleUser || last.Content != nudge || msgs[len(msgs)-2].Content != "让我想想。" {
		t.Fatalf("the request ends with %+v", msgs[len(msgs)-2:])
	}
}
