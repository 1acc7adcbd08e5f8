package loop_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/loop/catalog"
	"github.com/agentwarden/warden/loop/chain"
	"github.com/agentwarden/warden/loop/state"
	"github.com/agentwarden/warden/model/scripted"
)

// spaceContract is a delegatable read skill that shares the space it found.
const spaceContract = `{
  "delegatable": true,
  "tools": {"query_space": {"label": "查询空间", "success": {"path": "code", "op": "EQ", "value": 200},
    "extracts": [{"key": "spaces", "path": "data.spaces"}], "retry": {"maxAttempts": 1}}},
  "outputs": {"spaceId": {"share": "SESSION", "sources": ["EVIDENCE"], "required": false}}
}`

// providedContract is skillContract whose spaceId input comes from a
// space.query pre-node.
var providedContract = strings.Replace(skillContract, `"outputs": {"siteList": {"required": false}}`,
	`"inputs": {"spaceId": {"provider": "space.query"}, "owner": {"from": "prior.user.id", "required": true}},
  "outputs": {"siteList": {"required": false}}`, 1)

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
		return loop.Skill{Skill: &contract.Skill{Profile: contract.SkillProfile{SkillKey: key, SkillName: key, SemanticDesc: "技能 " + key,
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

func evID(callID string) string {
	s := sha256.Sum256([]byte(callID))
	return "ev_" + hex.EncodeToString(s[:8])
}

func (h *taskHarness) nodeEvents() []string {
	var out []string
	for _, e := range h.trace.Events() {
		if e.Kind == loop.KindNode || e.Kind == loop.KindTask {
			out = append(out, string(e.Kind)+" "+e.Node+" "+e.Status)
		}
	}
	return out
}

func TestTaskPlanning(t *testing.T) {
	t.Parallel()
	finish := func(out string) scripted.Turn { return turn(call("builtin_node_finish", `{"output":"`+out+`"}`)) }
	query := turn(call("query_space", `{"spaceName":"市场部"}`))
	tests := []struct {
		name   string
		skills []string
		turns  []scripted.Turn
		source loop.PlanSource
		nodes  string // id:skill target
		status state.Status
	}{
		{"single REACT candidate skips planning", []string{"space.query"}, []scripted.Turn{query, finish("找到市场部")},
			loop.PlanSingle, "n1:space.query", state.Done},
		{"valid plan; a target that is not a write tool is dropped", []string{"site.builder", "space.query"}, []scripted.Turn{
			{Text: "```json\n" + `{"nodes":[{"id":"b","skill_key":"site.builder","objective":"建站","dependsOn":["a"],"target":"create_site"},` +
				`{"id":"a","skill_key":"space.query","objective":"找空间","target":"query_space"}]}` + "\n```"},
			query, finish("找到市场部"), finish("不需要建站"), turn(call("builtin_node_fail", `{"reason":"用户未给标题"}`))},
			loop.PlanModel, "a:space.query b:site.builder>create_site", state.Failed},
		{"unknown skill falls back", []string{"space.query", "site.builder"}, []scripted.Turn{
			{Text: `{"nodes":[{"id":"a","skill_key":"cms.article"}]}`}, query, finish("找到市场部"), finish("不需要建站")},
			loop.PlanFallback, "n1:space.query n2:site.builder", state.Done},
		{"a cycle falls back", []string{"space.query", "site.builder"}, []scripted.Turn{
			{Text: `{"nodes":[{"id":"a","skill_key":"space.query","dependsOn":["b"]},{"id":"b","skill_key":"site.builder","dependsOn":["a"]}]}`},
			query, finish("找到市场部"), finish("不需要建站")},
			loop.PlanFallback, "n1:space.query n2:site.builder", state.Done},
		{"not JSON falls back", []string{"space.query", "site.builder"}, []scripted.Turn{{Text: "先查空间再建站"}, query, finish("找到市场部"), finish("不需要建站")},
			loop.PlanFallback, "n1:space.query n2:site.builder", state.Done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTaskHarness(t, skillContract, tt.turns, map[string][]answer{"query_space": {{body: spaces}}})
			exit, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: tt.skills})
			must(t, err)
			var got []string
			for _, n := range exit.Plan.Nodes {
				s := n.ID + ":" + n.SkillKey
				if n.Target != "" {
					s += ">" + n.Target
				}
				got = append(got, s)
			}
			if exit.Plan.Source != tt.source || strings.Join(got, " ") != tt.nodes || exit.Status != tt.status {
				t.Fatalf("exit %+v plan %v", exit, got)
			}
			if tt.source == loop.PlanModel {
				n, _ := h.store.Node("t1.b")
				if n.Target != "create_site" || n.TargetClaimed || n.Upstream[0] != "t1.a" || exit.Node != "t1.b" || exit.Reason != "用户未给标题" {
					t.Fatalf("node %+v exit %+v", n, exit)
				}
				h.wantTools("query_space SUCCESS stalls=0", "builtin_node_finish SUCCESS stalls=0",
					"builtin_node_finish REJECTED FINISH_NEED_TARGET stalls=1", "builtin_node_fail SUCCESS stalls=1")
			}
			if task, _ := h.store.Task("t1"); task.Status != tt.status {
				t.Fatalf("task %+v", task)
			}
			h.done()
		})
	}
}

// inputs.provider inserts a pre-node; its shared output is bound into the
// node's input; in the next task the pre-node is SKIPPED, its shared
// output existing, and the prior entity-less input stays marked missing.
func TestProviderPreNode(t *testing.T) {
	t.Parallel()
	out := func(callID string) scripted.Turn {
		return turn(call("builtin_output_set", `{"key":"spaceId","value":42,"sourceType":"EVIDENCE","sourceRef":"`+evID(callID)+`","sourcePath":"data.spaces.0.id"}`))
	}
	turns := []scripted.Turn{
		turn(call("query_space", `{"spaceName":"市场部"}`)), out("call_1_1"),
		turn(call("builtin_node_finish", `{"output":"空间 42"}`)),
		turn(call("builtin_node_finish", `{"output":"无需建站"}`)),
		// Second task: only the site node runs.
		turn(call("builtin_node_finish", `{"output":"仍无需建站"}`)),
	}
	h := newTaskHarness(t, providedContract, turns, map[string][]answer{"query_space": {{body: spaces}}})
	exit, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: []string{"site.builder"}})
	must(t, err)
	if exit.Status != state.Done || len(exit.Plan.Nodes) != 2 || exit.Plan.Nodes[0].ID != "n1.pre.space.query" || !exit.Plan.Nodes[0].Provider {
		t.Fatalf("exit %+v", exit)
	}
	n, _ := h.store.Node("t1.n1")
	if string(n.Inputs["spaceId"]) != "42" {
		t.Fatalf("inputs %s", n.Inputs)
	}
	sys := h.model.reqs[3].Messages[0].Content
	if !strings.Contains(sys, "## 节点输入\nspaceId: 42\n缺失的必填输入：owner") {
		t.Fatalf("prompt:\n%s", sys)
	}
	exit, err = h.runner.RunTask(ctx, loop.TaskInput{ID: "t2", Objective: userAsk, Skills: []string{"site.builder"}})
	must(t, err)
	if exit.Status != state.Done || exit.Output != "仍无需建站" {
		t.Fatalf("exit %+v", exit)
	}
	if pre, _ := h.store.Node("t2.n1.pre.space.query"); pre.Status != state.Skipped {
		t.Fatalf("pre-node %+v", pre)
	}
	want := "TASK  PLANNED\nNODE t1.n1.pre.space.query RUNNING\nNODE t1.n1.pre.space.query DONE\nNODE t1.n1 RUNNING\nNODE t1.n1 DONE\nTASK  DONE\n" +
		"TASK  PLANNED\nNODE t2.n1.pre.space.query SKIPPED\nNODE t2.n1 RUNNING\nNODE t2.n1 DONE\nTASK  DONE"
	if got := strings.Join(h.nodeEvents(), "\n"); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	h.done()
}

// A node delegates a read skill: the pre-node runs first, then the
// delegating node reads its result and goes on. A failed pre-node gives
// the delegator a message; the task does not fail.
func TestDelegation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		child  scripted.Turn
		result string
		status state.Status
	}{
		{"pre-node succeeds", turn(call("builtin_node_finish", `{"output":"市场部空间 id 42"}`)),
			"委派的前置节点（技能 space.query）已完成：市场部空间 id 42", state.Done},
		{"pre-node fails", turn(call("builtin_node_fail", `{"reason":"空间服务维护中"}`)),
			"委派的前置节点（技能 space.query）未成功（FAILED）：空间服务维护中。请据此决定后续处理：换一种方式完成，或向用户说明。", state.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			turns := []scripted.Turn{
				turn(call("builtin_node_delegate", `{"skillKey":"space.query","objective":"找市场部空间"}`)),
				turn(call("query_space", `{"spaceName":"市场部"}`)), tt.child,
				turn(call("builtin_node_finish", `{"output":"已了解空间"}`)),
			}
			h := newTaskHarness(t, skillContract, turns, map[string][]answer{"query_space": {{body: spaces}}})
			exit, err := h.runner.RunTask(ctx, loop.TaskInput{ID: "t1", Objective: userAsk, Skills: []string{"site.builder"}})
			must(t, err)
			if exit.Status != state.Done || exit.Output != "已了解空间" {
				t.Fatalf("exit %+v", exit)
			}
			child, _ := h.store.Node("t1.n1.d1")
			parent, _ := h.store.Node("t1.n1")
			if child.Status != tt.status || child.Depth != 1 || child.ParentID != "t1.n1" || parent.Delegations[0].Status != string(tt.status) {
				t.Fatalf("child %+v parent %+v", child, parent.Delegations)
			}
			msgs := h.model.reqs[3].Messages
			if got := msgs[len(msgs)-1].Content; got != tt.result {
				t.Fatalf("delegator read %q", got)
			}
			if r := lastEvent(h.harness, loop.KindResume); r.Status != "DELEGATION" || r.Node != "t1.n1" {
				t.Fatalf("resume %+v", r)
			}
			h.done()
		})
	}
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
