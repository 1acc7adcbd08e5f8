package scenario_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/model/openai"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/state"
)

// readingModel is a fake OpenAI-compatible provider whose every decision
// is computed from the messages of the request it answers: it knows the
// task only from the user message and learns ids only from the tool
// messages. It plays the demo task the way a careful model would: look the
// space up by name, read the space id from the result, list the space's
// websites, create the website, ask for approval when the write is held,
// and finish citing the evidence of the created website. When a tool
// message does not give it what it needs it fails the node and says why,
// as a real model would have to.
type readingModel struct {
	mu    sync.Mutex
	turns []string // what it decided, for the failure message
}

type wireMsg struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (m *wireMsg) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

var (
	userTask = regexp.MustCompile(`在 (\S+) 空间建一个网站，名称 ([^，]+)，域名 (\S+)`)
	citation = regexp.MustCompile(`\[ev:([^\]\s]+)\]`)
)

// resultJSON returns the JSON result a tool message carries: the first
// line that starts a JSON object. A message without one has none.
func resultJSON(msg string) map[string]any {
	for _, line := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			return v
		}
	}
	return nil
}

func path(v any, keys ...string) any {
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// decide returns the next assistant turn: a tool call (name, arguments).
func (m *readingModel) decide(msgs []wireMsg) (string, string) {
	var task []string
	names := map[string]string{} // call id → tool
	var last struct{ tool, text string }
	for _, msg := range msgs {
		switch msg.Role {
		case "user":
			if t := userTask.FindStringSubmatch(msg.text()); t != nil && task == nil {
				task = t[1:]
			}
		case "assistant":
			for _, tc := range msg.ToolCalls {
				names[tc.ID] = tc.Function.Name
			}
		case "tool":
			last.tool, last.text = names[msg.ToolCallID], msg.text()
		}
	}
	fail := func(why string) (string, string) {
		b, _ := json.Marshal(map[string]string{"reason": why})
		return "builtin_node_fail", string(b)
	}
	if task == nil {
		return fail("the user message names no space, website and domain")
	}
	space, site, domain := task[0], task[1], task[2]
	args := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) }
	// The space id is whatever the latest successful query_space result
	// says it is, read from the conversation each turn.
	spaceID := ""
	for i, msg := range msgs {
		if msg.Role != "tool" || names[msg.ToolCallID] != "query_space" {
			continue
		}
		if id, ok := path(resultJSON(msgs[i].text()), "data", "spaceId").(string); ok {
			spaceID = id
		}
	}
	switch last.tool {
	case "":
		return "query_space", args(map[string]any{"name": space})
	case "query_space":
		if spaceID == "" {
			return fail("query_space did not tell me the id of space " + space + ": " + last.text)
		}
		return "list_websites", args(map[string]any{"spaceId": spaceID})
	case "list_websites":
		r := resultJSON(last.text)
		items, ok := path(r, "data", "items").([]any)
		if !ok {
			return fail("list_websites did not show the websites of " + spaceID + ": " + last.text)
		}
		for _, it := range items {
			if path(it, "domain") == domain {
				return fail("domain " + domain + " is taken")
			}
		}
		return "create_website", args(map[string]any{"spaceId": spaceID, "name": site, "domain": domain})
	case "create_website":
		if strings.Contains(last.text, "builtin_node_approval") {
			return "builtin_node_approval", args(map[string]any{"toolName": "create_website",
				"summary": fmt.Sprintf("在 %s 空间创建网站 %s（%s）", space, site, domain)})
		}
		id, _ := path(resultJSON(last.text), "data", "websiteId").(string)
		ev := citation.FindStringSubmatch(last.text)
		if id == "" || ev == nil {
			return fail("create_website did not tell me the new website's id and evidence: " + last.text)
		}
		return "builtin_node_finish", args(map[string]any{"output": fmt.Sprintf("网站 %s（%s）已在 %s 空间创建，ID %s [ev:%s]", site, domain, space, id, ev[1])})
	}
	return fail("unexpected result of " + last.tool + ": " + last.text)
}

func (m *readingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []wireMsg `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name, arguments := m.decide(req.Messages)
	m.mu.Lock()
	n := len(m.turns)
	m.turns = append(m.turns, name+" "+arguments)
	m.mu.Unlock()
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": "reading",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": name, "arguments": arguments}}},
		}}},
		"usage": map[string]any{"prompt_tokens": 100 + n, "completion_tokens": 10, "total_tokens": 110 + n},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// TestReadingModelFinishesTheDemoTask runs the demo task against the real
// example MCP server with a model that knows only what the runtime sends
// it: the space id, the new website's id and the evidence id to cite must
// all come from the tool messages. The plugins run in-process and as wasm.
func TestReadingModelFinishesTheDemoTask(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts an MCP server")
	}
	for _, wasm := range []bool{false, true} {
		t.Run(map[bool]string{false: "native", true: "wasm"}[wasm], func(t *testing.T) {
			t.Parallel()
			readingModelRun(t, wasm)
		})
	}
}

func readingModelRun(t *testing.T, wasm bool) {
	s, err := scenario.Load("testdata/reading-model.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fake := &readingModel{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := openai.Defaults(srv.URL, "", "reading")
	cfg.MaxRetries = 0
	client, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, !wasm)
	o.Model = client
	// Loading compiles the plugins (a minute on a cold cache and a busy
	// machine); the run's own bound starts after it.
	if _, err := scenario.LoadPlugins(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := scenario.Run(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	var trace strings.Builder
	for _, e := range rep.Events {
		trace.WriteString(scenario.FormatEvent(e) + "\n")
	}
	fake.mu.Lock()
	turns := strings.Join(fake.turns, "\n")
	fake.mu.Unlock()
	for _, e := range rep.Events {
		if e.Sent != "" {
			t.Logf("%s → model:\n%s", e.Tool, e.Sent)
		}
	}
	if rep.Status != state.Done {
		t.Fatalf("node %s, want DONE\nmodel turns:\n%s\ntrace:\n%s", rep.Status, turns, trace.String())
	}
	var finish string
	for _, e := range rep.Events {
		if e.Kind == "NODE" && e.Status == string(state.Done) {
			finish = e.Message
		}
	}
	if !strings.Contains(finish, "ID ws-2 [ev:ev_") {
		t.Fatalf("finish output %q does not name ws-2 with its evidence\nmodel turns:\n%s", finish, turns)
	}
	// The provider's usage of every turn is in the trace.
	var usage []string
	for _, e := range rep.Events {
		if e.Kind == "MODEL" {
			usage = append(usage, fmt.Sprintf("%d/%d", e.PromptTokens, e.CompletionTokens))
		}
	}
	if strings.Join(usage, " ") != "100/10 101/10 102/10 103/10 104/10" {
		t.Fatalf("usage events %v", usage)
	}
	want := []string{"query_space", "list_websites", "create_website", "builtin_node_approval", "builtin_node_finish"}
	var got []string
	for _, l := range fake.turns {
		got = append(got, strings.Fields(l)[0])
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("model called %v, want %v\nmodel turns:\n%s", got, want, turns)
	}
}
