package storetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// ids are the tasks, nodes and calls the script makes.
var (
	scriptTasks = []string{"t1", "t2"}
	scriptNodes = []string{"n1", "pre", "n2", "n3"}
	scriptCalls = []string{"c1", "c2"}
)

// script drives a store through every kind of change: tasks, a delegated
// pre-node, messages, every effect, a follow-up, an approval, recovery
// and verification of writes.
func script(t *testing.T, s state.Store) {
	t.Helper()
	must(t, s.CreateTask(state.Task{ID: "t1", Objective: "建站"}))
	must(t, s.CreateTask(state.Task{ID: "t2", Objective: "second", Status: state.Suspended}))
	must(t, s.CreateNode(state.Node{ID: "n1", TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(skill),
		ToolNames: []string{"query_space", "create_site"}, Skills: []string{"site.builder", "space.query"}, Delegatable: []string{"space.query"},
		DelegateMaxDepth: 2, Inputs: map[string]json.RawMessage{"title": json.RawMessage(`"Spring"`)}}))
	must(t, s.AddUserMessage("帮我建一个网站"))
	must(t, s.AppendMessages("n1", model.Message{Role: model.RoleUser, Content: "建站"},
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c0", Name: "query_space", Arguments: `{"spaceName":"市场部"}`}}}))
	must(t, s.Apply("n1", []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query","objective":"找空间"}`)}))
	must(t, s.CreateNode(state.Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1", Depth: 1}))
	must(t, s.Apply("pre", []abi.Effect{
		raw(abi.EffectEvidenceRegister, `{"id":"ev_p","tool":"query_space","status":"SUCCESS","businessOk":true,"payload":{"spaces":[{"id":42}]}}`),
		raw(abi.EffectEntityRecord, `{"type":"space","id":"42","name":"市场部","attrs":{"size":3}}`),
		raw(abi.EffectNodeFinish, `{"output":"found 42"}`)}))
	must(t, s.Apply("n1", []abi.Effect{item,
		raw(abi.EffectFingerprintRecord, `{"tool":"query_space","argsDigest":"a","outcome":"SUCCESS"}`),
		raw(abi.EffectStateSet, `{"key":"note","value":{"a":[1,2]}}`),
		effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendFollowUp, Question: "网站标题？", ExpectedFields: []string{"title"}, Suggestions: []string{"Spring"}})}))
	_, err := s.AnswerFollowUp("n1", "Spring Launch")
	must(t, err)
	must(t, s.Gate("n1", "create_site", "c1", args))
	must(t, s.Apply("n1", []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendApproval, Question: "建站？",
		Tool: "create_site", Args: args, ArgsDigest: state.ArgsDigest(args)})}))
	must(t, s.Resuspend("n1", Clock.Add(60e9)))
	_, err = s.Approve("n1", Clock.Add(120e9))
	must(t, err)
	must(t, s.Apply("n1", []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k1","argsDigest":"d1","callId":"c1","approved":true}`)}))
	must(t, s.RecordCall("t1", "c1", args))
	must(t, s.Apply("n1", []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k2","argsDigest":"d2","callId":"c2"}`),
		raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k2","state":"SUCCESS","businessOk":true,"result":{"outcome":"SUCCESS","text":"ok","data":{"siteId":"s2"}}}`),
		raw(abi.EffectEvidenceRegister, `{"id":"ev_2","tool":"create_site","status":"SUCCESS","businessOk":true,"toolCallId":"c2"}`)}))
	must(t, s.RecordCall("t1", "c2", json.RawMessage(`{"title":"B"}`)))
	_, err = s.RecoverWrites()
	must(t, err)
	res := abi.Success("建站成功", json.RawMessage(`{"siteId":"s7"}`))
	must(t, s.SettleUncertain("t1", "create_site", "k1", true, &res))
	must(t, s.ClearApproval("n1"))
	must(t, s.SetTarget("n1", "create_site", true))
	must(t, s.SetProgress("n1", 1, 4))
	must(t, s.Apply("n1", []abi.Effect{
		raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_7","sourceType":"EVIDENCE","sourceRef":"ev_2"}`),
		raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":42,"name":"市场部"},"sourceType":"EVIDENCE","sourceRef":"ev_p","sourcePath":"data.spaces[0]"}`),
		raw(abi.EffectNodeFinish, `{"output":"done"}`)}))
	must(t, s.SetTaskStatus("t1", state.Done))
	must(t, s.CreateNode(state.Node{ID: "n2", TaskID: "t2", SkillKey: "site.builder", Contract: json.RawMessage(skill), HasDependents: true, Upstream: []string{"n1"}}))
	must(t, s.Apply("n2", []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"ev_1","tool":"query_space","status":"FAILED","empty":true}`),
		effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendVerify, Question: "建好了吗？"})}))
	must(t, s.CreateNode(state.Node{ID: "n3", TaskID: "t2", SkillKey: "x"}))
	must(t, s.SetNodeStatus("n3", state.Skipped, "not needed"))
}

// Snapshot reads everything a store shows about the script's ids, as JSON
// by name, to compare two stores or one store at two times.
func Snapshot(t testing.TB, s state.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	put := func(name string, v any, err error) {
		if err != nil {
			out[name] = "error: " + err.Error()
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = string(b)
	}
	for _, id := range scriptTasks {
		tk, err := s.Task(id)
		put("task "+id, tk, err)
		l, err := s.Ledger(id)
		put("ledger "+id, l, err)
		sh, err := s.Shared(id)
		put("shared "+id, sh, err)
		for _, c := range scriptCalls {
			a, ok := s.CallArgs(id, c)
			put("call "+id+" "+c, map[string]any{"args": a, "ok": ok}, nil)
		}
	}
	for _, id := range scriptNodes {
		n, err := s.Node(id)
		put("node "+id, n, err)
		m, err := s.Messages(id)
		put("messages "+id, m, err)
		ev, err := s.Evidence(id)
		put("evidence "+id, ev, err)
		fp, err := s.Fingerprints(id)
		put("fingerprints "+id, fp, err)
		v, err := s.Views(id)
		if err != nil {
			put("views "+id, nil, err)
			continue
		}
		for k, b := range v {
			out["view "+id+" "+k] = string(b)
		}
	}
	put("entities", s.Entities(), nil)
	put("session values", s.SessionValues(), nil)
	return out
}

func diff(a, b map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if a[k] != b[k] {
			lines = append(lines, fmt.Sprintf("%s:\n  want %s\n  got  %s", k, a[k], b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: unexpected %s", k, b[k]))
		}
	}
	return strings.Join(lines, "\n")
}

// testSameAsMemory runs the script on the store and on a state.Memory and
// compares everything they show, byte for byte.
func testSameAsMemory(t *testing.T, open func(*testing.T) state.Store) {
	ref, err := state.NewMemory(Options())
	must(t, err)
	s := open(t)
	script(t, ref)
	script(t, s)
	if want, got := Snapshot(t, ref), Snapshot(t, s); !maps.Equal(want, got) {
		t.Fatalf("the store differs from state.Memory:\n%s", diff(want, got))
	}
}

// testDurability closes and reopens a durable store: everything is still
// there, and it goes on working.
func testDurability(t *testing.T, open func(*testing.T) state.Store) {
	s := open(t)
	r, ok := s.(Reopener)
	if !ok {
		t.Skip("the store is not durable (no Reopener)")
	}
	script(t, s)
	before := Snapshot(t, s)
	s = r.Reopen(t)
	if after := Snapshot(t, s); !maps.Equal(before, after) {
		t.Fatalf("reopened store differs:\n%s", diff(before, after))
	}
	must(t, s.AddUserMessage("again"))
	must(t, s.Apply("n2", nil))
	if _, err := s.AnswerFollowUp("n2", "x"); err == nil {
		t.Fatal("answered a node suspended for VERIFY")
	}
	v, err := s.Views("n1")
	must(t, err)
	if !strings.Contains(string(v[string(abi.CapStateConversation)]), "again") {
		t.Fatalf("conversation %s", v[string(abi.CapStateConversation)])
	}
}
