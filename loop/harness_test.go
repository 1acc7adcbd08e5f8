package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// The skill of every runner test: a space query, a site query with an
// optional output, and a gated write whose spaceId comes from the space
// query's evidence.
const skillContract = `{
  "tools": {
    "query_space": {
      "label": "查询空间",
      "args": {"spaceName": {"sources": ["USER", "MODEL"], "label": "空间名"}},
      "success": {"path": "code", "op": "EQ", "value": 200},
      "error": {"code": "code", "message": "msg"},
      "extracts": [{"key": "spaces", "path": "data.spaces", "entity": {"type": "space"}}],
      "timeoutMs": 200,
      "retry": {"maxAttempts": 1}
    },
    "query_site": {
      "label": "查询网站",
      "success": {"path": "code", "op": "EQ", "value": 200},
      "extracts": [{"key": "sites", "path": "data.sites"}],
      "retry": {"maxAttempts": 1}
    },
    "create_site": {
      "label": "创建网站",
      "sideEffect": "WRITE",
      "idempotencyKey": ["title", "spaceId"],
      "args": {
        "title": {"sources": ["USER"], "label": "网站标题"},
        "spaceId": {"from": "evidence.spaces.0.id", "sources": ["EVIDENCE"], "label": "空间"}
      },
      "success": {"path": "code", "op": "EQ", "value": 200},
      "error": {"code": "code", "message": "msg"},
      "extracts": [{"key": "site", "path": "data", "entity": {"type": "site"}}],
      "timeoutMs": 200
    }
  },
  "outputs": {"siteList": {"required": false}}
}`

var schemas = map[string]string{
	"query_space": `{"type":"object","additionalProperties":false,"required":["spaceName"],"properties":{"spaceName":{"type":"string","minLength":1}}}`,
	"query_site":  `{"type":"object","properties":{}}`,
	"create_site": `{"type":"object","additionalProperties":false,"required":["title","spaceId"],"properties":{"title":{"type":"string","maxLength":40},"spaceId":{"type":"integer"}}}`,
}

const (
	userAsk  = "帮我在市场部空间建一个网站，标题叫 Spring Launch"
	spaces   = `{"code":200,"msg":"ok","data":{"spaces":[{"id":42,"name":"市场部"}]}}`
	created  = `{"code":200,"msg":"ok","data":{"id":"site_7","title":"Spring Launch"}}`
	taken    = `{"code":40901,"msg":"标题已被占用"}`
	sites    = `{"code":200,"data":{"sites":[{"id":"site_1","name":"官网"}]}}`
	maintain = `{"code":50001,"msg":"空间服务维护中"}`
)

var fixedClock = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// tools is a scripted chain.Caller: each tool answers from a queue, the
// last answer repeating; every call is recorded.
type tools struct {
	mu      sync.Mutex
	answers map[string][]answer
	calls   []string
}

type answer struct {
	body string
	err  error
}

func (s *tools) CallTool(_ context.Context, name string, args json.RawMessage) (chain.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, name+" "+string(args))
	q := s.answers[name]
	if len(q) == 0 {
		return chain.Response{}, fmt.Errorf("no script for %s: %w", name, chain.ErrUnreachable)
	}
	a := q[0]
	if len(q) > 1 {
		s.answers[name] = q[1:]
	}
	if a.err != nil {
		return chain.Response{}, a.err
	}
	return chain.Response{Content: json.RawMessage(a.body)}, nil
}

func (s *tools) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// recording keeps every request the model saw.
type recording struct {
	model.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recording) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Complete(ctx, req)
}

// nativeGuards are the seven first-party guards, in-process.
func nativeGuards() map[string]chain.Guard { return chain.NativeGuards() }

func nativeBuiltins() []loop.Builtin {
	return loop.NativeBuiltins(func() time.Time { return fixedClock })
}

// harness is one node ready to run, with its store, tools, model and trace.
type harness struct {
	t      *testing.T
	runner *loop.Runner
	store  *state.Memory
	tools  *tools
	model  *recording
	trace  *loop.Recorder
	clock  *time.Time
}

type setup struct {
	turns    []scripted.Turn
	answers  map[string][]answer
	guards   map[string]chain.Guard
	builtins []loop.Builtin
	config   func(*loop.Config)
	// contract replaces skillContract.
	contract string
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	src := skillContract
	if s.contract != "" {
		src = s.contract
	}
	parsed, _, err := contract.Parse("site.builder", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	toolNames := []string{"query_space", "query_site", "create_site"}
	sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: "site.builder", SkillName: "建站",
		SkillManual: "先查询空间，再创建网站。"}, Contract: parsed, ToolNames: toolNames}
	tl := &tools{answers: s.answers}
	g := s.guards
	if g == nil {
		g = nativeGuards()
	}
	ch, err := chain.New(g, nil, &chain.Invoker{Caller: tl})
	if err != nil {
		t.Fatal(err)
	}
	var defs []catalog.BusinessTool
	for _, n := range toolNames {
		defs = append(defs, catalog.BusinessTool{Name: n, Description: parsed.Tools[n].Label, InputSchema: json.RawMessage(schemas[n])})
	}
	h := &harness{t: t, tools: tl, trace: &loop.Recorder{}}
	now := fixedClock
	h.clock = &now
	st, err := state.NewMemory(state.Options{SessionID: "s1", Now: func() time.Time { return *h.clock }})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	must(t, st.CreateTask(state.Task{ID: "t1", Objective: userAsk}))
	must(t, st.CreateNode(state.Node{ID: "n1", TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(src),
		ToolNames: toolNames, Skills: []string{"site.builder"}}))
	must(t, st.AddUserMessage(userAsk))
	must(t, st.AppendMessages("n1", model.Message{Role: model.RoleUser, Content: userAsk}))
	m, err := scripted.New(s.turns)
	if err != nil {
		t.Fatal(err)
	}
	h.model = &recording{Model: m}
	cfg := loop.DefaultConfig()
	cfg.Tenant = "acme"
	cfg.Now = func() time.Time { return *h.clock }
	if s.config != nil {
		s.config(&cfg)
	}
	b := s.builtins
	if b == nil {
		b = nativeBuiltins()
	}
	h.runner, err = loop.New(loop.Options{Model: h.model, Store: st, Skills: []loop.Skill{{Skill: sk, Chain: ch, Tools: defs}},
		Builtins: b, Sink: h.trace, Config: cfg,
		Agent: contract.AgentProfile{AgentName: "建站助手", IdentityDesc: "你是建站助手", MissionDesc: "帮用户建网站", BoundaryDesc: "只处理建站",
			StyleDesc: "简洁", PrincipleDesc: "不编造数据"}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func call(name, args string) scripted.Call { return scripted.Call{Name: name, Arguments: args} }

func turn(calls ...scripted.Call) scripted.Turn { return scripted.Turn{ToolCalls: calls} }

// toolEvents renders the TOOL events as "tool OUTCOME NAME stalls=N", and
// skipped calls as "tool SKIPPED".
func (h *harness) toolEvents() []string {
	var out []string
	for _, e := range h.trace.Events() {
		if e.Kind != loop.KindTool {
			continue
		}
		if e.Status == "SKIPPED" {
			out = append(out, e.Tool+" SKIPPED")
			continue
		}
		s := e.Tool + " " + e.Outcome
		if e.Name != "" {
			s += " " + e.Name
		}
		out = append(out, fmt.Sprintf("%s stalls=%d", s, e.Stalls))
	}
	return out
}

func (h *harness) wantTools(want ...string) {
	h.t.Helper()
	if got := h.toolEvents(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		h.t.Fatalf("tool events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// event returns the first event of a kind and tool.
func (h *harness) event(kind loop.Kind, tool string) loop.Event {
	h.t.Helper()
	for _, e := range h.trace.Events() {
		if e.Kind == kind && (tool == "" || e.Tool == tool) {
			return e
		}
	}
	h.t.Fatalf("no %s event for %q in %+v", kind, tool, h.trace.Events())
	return loop.Event{}
}

// toolMessage returns the content of the tool message answering the n-th
// call (1-based) of the model's turn (1-based).
func (h *harness) toolMessage(turn, n int) string {
	h.t.Helper()
	msgs, err := h.store.Messages("n1")
	must(h.t, err)
	id := fmt.Sprintf("call_%d_%d", turn, n)
	for _, m := range msgs {
		if m.Role == model.RoleTool && m.ToolCallID == id {
			return m.Content
		}
	}
	h.t.Fatalf("no tool message for %s", id)
	return ""
}

func (h *harness) done() {
	h.t.Helper()
	if r := h.model.Model.(*scripted.Model).Remaining(); r != 0 {
		h.t.Fatalf("%d scripted turns left", r)
	}
}

func parse(t *testing.T, src string) *contract.Contract {
	t.Helper()
	c, _, err := contract.Parse("x", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
