package loop_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/loop"
)

// spaceContract is a delegatable read skill that shares the space it found.
const spaceContract = `{
  "delegatable": true,
  "tools": {"query_space": {"label": "查询空间", "success": {"path": "code", "op": "EQ", "value": 200},
    "extracts": [{"key": "spaces", "path": "data.spaces"}], "retry": {"maxAttempts": 1}}},
  "outputs": {"spaceId": {"share": "SESSION", "sources": ["EVIDENCE"], "required": false}}
}`

type taskHarness struct {
	*harness
	opts loop.Options
}

func newTaskHarness(t *testing.T, site string, turns []scripted.Turn, answers map[string][]answer) *taskHarness {
	t.Helper()
	tl := &tools{answers: answers}
	ch, err := chain.New(nativeGuards(), nil, &chain.Invoker{Caller: tl})
	must(t, err)
	mk := func(key, src string, names ...string) loop.Skill {
		c, _, err := contract.Parse(key, []byte(src))
		must(t, err)
		var defs []catalog.BusinessTool
		for _, n := range names {
			defs = append(defs, catalog.BusinessTool{Name: n, Description: c.Tools[n].Label, InputSchema: json.RawMessage(schemas[n])})
		}
		return loop.Skill{Skill: &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: key, SkillName: key, SemanticDesc: "技能 " + key,
			SkillContract: src}, Contract: c, ToolNames: names}, Chain: ch, Tools: defs}
	}
	h := &harness{t: t, tools: tl, trace: &loop.Recorder{}}
	now := fixedClock
	h.clock = &now
	st, err := state.NewMemory(state.Options{SessionID: "s1", Now: func() time.Time { return *h.clock }})
	must(t, err)
	h.store = st
	m, err := scripted.New(turns)
	must(t, err)
	h.model = &recording{Model: m}
	cfg := loop.DefaultConfig()
	cfg.Now = func() time.Time { return *h.clock }
	opts := loop.Options{Model: h.model, Store: st, Builtins: nativeBuiltins(), Sink: h.trace, Config: cfg,
		Skills: []loop.Skill{mk("site.builder", site, "query_space", "query_site", "create_site"), mk("space.query", spaceContract, "query_space")}}
	h.runner, err = loop.New(opts)
	must(t, err)
	return &taskHarness{h, opts}
}

// After a non-success the prompt carries the reflection steps, unless
// configured off; they defer to the observation's next step.
func TestReflectHint(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		h := newHarness(t, setup{turns: []scripted.Turn{
			turn(call("query_space", `{"spaceName":"市场部"}`)),
			turn(call("query_space", `{"spaceName":"市场部"}`)),
			turn(call("builtin_node_finish", `{"output":"找到市场部"}`)),
		}, answers: map[string][]answer{"query_space": {{err: chain.ErrUnreachable}, {body: spaces}}},
			config: func(c *loop.Config) { c.Reflect = on }})
		_, err := h.runner.Run(ctx, "n1")
		must(t, err)
		for i, want := range []bool{false, on, false} {
			sys := h.model.reqs[i].Messages[0].Content
			if got := strings.Contains(sys, "## 失败反思\n上一次工具调用没有成功"); got != want {
				t.Fatalf("reflect=%v turn %d: section %v:\n%s", on, i+1, got, sys)
			}
		}
		if !strings.Contains(loop.ReflectHint("zh-CN"), `修正必须遵守该返回中"下一步："的要求，不能替代它。`) {
			t.Fatal(loop.ReflectHint("zh-CN"))
		}
	}
}

// A task's login identity carries open platform fields only (§11): a
// hidden field, an unknown one or a value that is not JSON is refused
// before the task exists.
func TestRunTaskRefusesPlatformFields(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		platform map[string]json.RawMessage
		want     string
	}{
		{"hidden", map[string]json.RawMessage{"userId": json.RawMessage(`1`), "passportId": json.RawMessage(`"p-1"`)},
			`loop: task t1: platform field "passportId" (open: userId, memberId, name, organId, organName, organType, deptPath): not an open platform field`},
		{"unknown", map[string]json.RawMessage{"tenant": json.RawMessage(`"acme"`)},
			`loop: task t1: platform field "tenant" (open: userId, memberId, name, organId, organName, organType, deptPath): not an open platform field`},
		{"not JSON", map[string]json.RawMessage{"name": json.RawMessage(`张三`)},
			`loop: task t1: platform field name: the value is not JSON: not an open platform field`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, nil, nil)
			_, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Platform: tt.platform})
			if !errors.Is(err, loop.ErrPlatformField) || err.Error() != tt.want {
				t.Fatalf("err %v, want %s", err, tt.want)
			}
			if _, err := h.store.Task("t1"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("task created: %v", err)
			}
		})
	}
}

// A task created but never planned (the process died during planning)
// takes the identity of the round that restarts it; a planned one keeps
// its own, saved with its graph.
func TestRestartTaskPlatform(t *testing.T) {
	t.Parallel()
	fail := scripted.Turn{ToolCalls: []scripted.Call{{Name: "builtin_node_fail", Arguments: `{"reason":"停"}`}}}
	h := newTaskHarness(t, skillContract, []scripted.Turn{fail}, nil)
	must(t, h.store.CreateTask(state.Task{ID: "t1", Objective: userAsk}))
	id := map[string]json.RawMessage{"userId": json.RawMessage(`10086`)}
	if _, err := h.runner.RestartTask(ctx, loop.TaskInput{ID: "t1", Skills: []string{"site.builder"}, Platform: id}); err != nil {
		t.Fatal(err)
	}
	n, err := h.store.Node("t1.n1")
	if err != nil || string(n.Platform["userId"]) != "10086" {
		t.Fatalf("node %+v: %v", n.Platform, err)
	}
	// A runner that did not plan it reads the identity from the graph.
	other, err := loop.New(h.opts)
	must(t, err)
	task, _ := h.store.Task("t1")
	if !strings.Contains(string(task.Graph), `"platform":{"userId":10086}`) {
		t.Fatalf("graph %s", task.Graph)
	}
	if _, err := other.RestartTask(ctx, loop.TaskInput{ID: "t1", Platform: map[string]json.RawMessage{"userId": json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.store.Node("t1.n1"); string(n.Platform["userId"]) != "10086" {
		t.Fatalf("node %+v", n.Platform)
	}
}
