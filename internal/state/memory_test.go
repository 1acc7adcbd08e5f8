package state

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/services"
)

const skill = `{
  // a read and a gated write
  "tools": {
    "query_space": {"args": {"spaceName": {"sources": ["USER"]}},
      "extracts": [{"key": "spaces", "path": "data.spaces", "entity": {"type": "space"}}]},
    "create_site": {"sideEffect": "WRITE", "args": {"title": {"sources": ["USER"]}}, "success": {"path": "code", "op": "EQ", "value": 200}}
  },
  "outputs": {
    "siteId": {"required": true, "share": "TASK"},
    "space": {"required": false, "share": "SESSION", "entity": {"type": "space"}}
  }
}`

var clock = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *Memory {
	t.Helper()
	m, err := NewMemory(Options{SessionID: "s1", ReservedKeys: []string{"_phase"}, BypassTools: []string{"ping"},
		Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CreateTask(Task{ID: "t1", Objective: "建站"}); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateNode(Node{ID: "n1", TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(skill),
		ToolNames: []string{"query_space", "create_site"}}); err != nil {
		t.Fatal(err)
	}
	return m
}

func effect(kind string, payload any) abi.Effect {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return abi.Effect{Kind: kind, Payload: b}
}

func raw(kind, payload string) abi.Effect {
	return abi.Effect{Kind: kind, Payload: json.RawMessage(payload)}
}

var (
	reserve = raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k1","argsDigest":"d1","callId":"c1"}`)
	settle  = raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"SUCCESS","businessOk":true,"result":{"outcome":"SUCCESS","text":"ok","wire":"x","message":"ok"}}`)
	item    = raw(abi.EffectEvidenceRegister, `{"id":"ev_1","tool":"query_space","status":"SUCCESS","businessOk":true,"result":"success_with_data","sourceType":"query","locator":"query_space","retrievedAt":"now","toolCallId":"c0"}`)
)

func TestApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prior   []abi.Effect
		effects []abi.Effect
		err     error  // nil = applied
		errText string // substring of the error
		check   func(t *testing.T, m *Memory)
	}{
		{name: "reserve then settle a write", effects: []abi.Effect{reserve, settle}, check: func(t *testing.T, m *Memory) {
			l, _ := m.Ledger("t1")
			if len(l) != 1 || l[0].State != abi.LedgerSuccess || l[0].NodeID != "n1" || l[0].Result == nil || l[0].Result.Text != "ok" || !*l[0].BusinessOK {
				t.Fatalf("ledger %+v", l)
			}
		}},
		{name: "settle without a reservation", effects: []abi.Effect{settle}, err: ErrInvalidEffect, errText: "was not reserved"},
		{name: "reserve an open write again", prior: []abi.Effect{reserve}, effects: []abi.Effect{reserve}, err: ErrInvalidEffect, errText: "already STARTED"},
		{name: "reserve a write that succeeded", prior: []abi.Effect{reserve, settle}, effects: []abi.Effect{reserve}, err: ErrInvalidEffect, errText: "already SUCCESS"},
		{name: "reserve again after a failure", prior: []abi.Effect{reserve, raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"FAILED"}`)},
			effects: []abi.Effect{reserve}, check: func(t *testing.T, m *Memory) {
				if l, _ := m.Ledger("t1"); len(l) != 1 || l[0].State != abi.LedgerStarted {
					t.Fatalf("ledger %+v", l)
				}
			}},
		{name: "settle to an unknown state", prior: []abi.Effect{reserve}, effects: []abi.Effect{raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"STARTED"}`)},
			err: ErrInvalidEffect, errText: `settle state "STARTED"`},
		{name: "reserve without a digest", effects: []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k1"}`)}, err: ErrInvalidEffect, errText: "argsDigest required"},
		{name: "fingerprint", effects: []abi.Effect{raw(abi.EffectFingerprintRecord, `{"tool":"q","argsDigest":"a","outcome":"SUCCESS"}`)}, check: func(t *testing.T, m *Memory) {
			if f, _ := m.Fingerprints("n1"); len(f) != 1 || f[0].Tool != "q" {
				t.Fatalf("fingerprints %+v", f)
			}
		}},
		{name: "fingerprint with a bad outcome", effects: []abi.Effect{raw(abi.EffectFingerprintRecord, `{"tool":"q","argsDigest":"a","outcome":"MAYBE"}`)}, err: ErrInvalidEffect},
		{name: "evidence gets the node", effects: []abi.Effect{item}, check: func(t *testing.T, m *Memory) {
			if ev, _ := m.Evidence("n1"); len(ev) != 1 || ev[0].NodeID != "n1" {
				t.Fatalf("evidence %+v", ev)
			}
		}},
		{name: "evidence of a call that never ran", effects: []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"e","tool":"q","status":"REJECTED"}`)},
			err: ErrInvalidEffect, errText: "only executed calls"},
		{name: "entity newest first, replacing", effects: []abi.Effect{
			raw(abi.EffectEntityRecord, `{"type":"space","id":"42","name":"市场部"}`),
			raw(abi.EffectEntityRecord, `{"type":"space","id":"7"}`),
			raw(abi.EffectEntityRecord, `{"type":"space","id":"42","name":"市场部2"}`)}, check: func(t *testing.T, m *Memory) {
			e := m.Entities()
			if len(e) != 2 || e[0].ID != "42" || e[0].Name != "市场部2" || e[0].TaskID != "t1" || e[1].ID != "7" {
				t.Fatalf("entities %+v", e)
			}
		}},
		{name: "entity without id", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"space"}`)}, err: ErrInvalidEffect, errText: "type, id required"},
		{name: "entity with a number id", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"space","id":"42","idJson":42}`)}, check: func(t *testing.T, m *Memory) {
			if e := m.Entities(); len(e) != 1 || string(e[0].IDJSON) != "42" {
				t.Fatalf("entities %+v", e)
			}
		}},
		{name: "entity with a number id no float64 holds", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"order","id":"1e400","idJson":1e400}`),
			raw(abi.EffectEntityRecord, `{"type":"order","id":"1234567890123456789","idJson":1234567890123456789}`)}, check: func(t *testing.T, m *Memory) {
			if e := m.Entities(); len(e) != 2 || string(e[0].IDJSON) != "1234567890123456789" || string(e[1].IDJSON) != "1e400" {
				t.Fatalf("entities = %+v", e)
			}
		}},
		{name: "entity with two values as idJson", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"space","id":"42","idJson":[1,2]}`)},
			err: ErrInvalidEffect, errText: `entity idJson [1,2]: only a number or a boolean`},
		{name: "entity with a string idJson", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"space","id":"42","idJson":"42"}`)},
			err: ErrInvalidEffect, errText: `entity idJson "42": only a number or a boolean`},
		{name: "suspend for approval", effects: []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendApproval, Question: "建站？", Tool: "create_site", ArgsDigest: "d"})},
			check: func(t *testing.T, m *Memory) {
				n, _ := m.Node("n1")
				if n.Status != Suspended || n.Suspension.Kind != abi.SuspendApproval || !n.Suspension.At.Equal(clock) {
					t.Fatalf("node %+v", n)
				}
			}},
		{name: "approval without the gated call", effects: []abi.Effect{raw(abi.EffectNodeSuspend, `{"kind":"APPROVAL","question":"q"}`)}, err: ErrInvalidEffect},
		{name: "suspension of an unknown kind", effects: []abi.Effect{raw(abi.EffectNodeSuspend, `{"kind":"NAP","question":"q"}`)}, err: ErrInvalidEffect, errText: `kind "NAP"`},
		{name: "nothing after the node left RUNNING", effects: []abi.Effect{raw(abi.EffectNodeFail, `{"reason":"r"}`), raw(abi.EffectStateSet, `{"key":"a","value":1}`)},
			err: ErrNodeNotRunning},
		{name: "finish shares outputs and records entities", effects: []abi.Effect{
			raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_7","sourceType":"EVIDENCE","sourceRef":"ev_1"}`),
			raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":42,"name":"市场部"},"sourceType":"EVIDENCE","sourceRef":"ev_1"}`),
			raw(abi.EffectNodeFinish, `{"output":"done"}`)}, check: func(t *testing.T, m *Memory) {
			n, _ := m.Node("n1")
			sh, _ := m.Shared("t1")
			if n.Status != Done || n.Output != "done" || string(sh["siteId"]) != `"site_7"` || string(m.SessionValues()["space"]) != `{"id":42,"name":"市场部"}` {
				t.Fatalf("node %+v shared %s session %s", n, sh, m.SessionValues())
			}
			if e := m.Entities(); len(e) != 1 || e[0].Type != "space" || e[0].ID != "42" {
				t.Fatalf("entities %+v", e)
			}
		}},
		{name: "finish without output", effects: []abi.Effect{raw(abi.EffectNodeFinish, `{"output":" "}`)}, err: ErrInvalidEffect},
		{name: "delegate", effects: []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query","objective":"找空间"}`)}, check: func(t *testing.T, m *Memory) {
			if n, _ := m.Node("n1"); len(n.Delegations) != 1 || n.Delegations[0].Status != "PENDING" {
				t.Fatalf("delegations %+v", n.Delegations)
			}
		}},
		{name: "state.set", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":"note","value":{"a":1}}`)}, check: func(t *testing.T, m *Memory) {
			if n, _ := m.Node("n1"); string(n.Scratch["note"]) != `{"a":1}` {
				t.Fatalf("scratch %s", n.Scratch)
			}
		}},
		{name: "state.set of a reserved key", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":"_phase","value":1}`)}, err: ErrInvalidEffect, errText: "reserved"},
		{name: "output without a source", effects: []abi.Effect{raw(abi.EffectOutputWrite, `{"key":"siteId","value":1}`)}, err: ErrInvalidEffect},
		{name: "payload that is not JSON", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":`)}, err: ErrInvalidEffect},
		{name: "unknown kind", effects: []abi.Effect{raw("node.teleport", `{}`)}, err: ErrUnknownEffect},
		{name: "all or nothing", effects: []abi.Effect{reserve, item, raw("node.teleport", `{}`)}, err: ErrUnknownEffect, check: func(t *testing.T, m *Memory) {
			l, _ := m.Ledger("t1")
			ev, _ := m.Evidence("n1")
			if len(l) != 0 || len(ev) != 0 {
				t.Fatalf("partly applied: ledger %+v evidence %+v", l, ev)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newStore(t)
			if err := m.Apply("n1", tt.prior); err != nil {
				t.Fatal(err)
			}
			err := m.Apply("n1", tt.effects)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("apply: %v", err)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("err %v, want %v", err, tt.err)
			case tt.err != nil && !strings.Contains(err.Error(), tt.errText):
				t.Fatalf("err %q does not say %q", err, tt.errText)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestViews(t *testing.T) {
	t.Parallel()
	m := newStore(t)
	if err := m.CreateNode(Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1", Depth: 1}); err != nil {
		t.Fatal(err)
	}
	_ = m.AddUserMessage("帮我建一个网站")
	if err := m.Apply("pre", []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"ev_p","tool":"query_space","status":"SUCCESS","businessOk":true}`)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply("n1", []abi.Effect{item, raw(abi.EffectEvidenceRegister, `{"id":"ev_2","tool":"create_site","status":"FAILED","result":"failure"}`)}); err != nil {
		t.Fatal(err)
	}
	v, err := m.Views("n1")
	if err != nil {
		t.Fatal(err)
	}
	var node abi.NodeView
	var ev abi.EvidenceView
	var conv abi.ConversationView
	var fp abi.FingerprintView
	for k, dst := range map[abi.Capability]any{abi.CapStateNode: &node, abi.CapStateEvidence: &ev, abi.CapStateConversation: &conv, abi.CapStateFingerprints: &fp} {
		if err := json.Unmarshal(v[string(k)], dst); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	var ids []string
	for _, it := range ev.Items {
		ids = append(ids, it.ID)
	}
	if got := strings.Join(ids, ","); got != "ev_2,ev_1,ev_p" {
		t.Fatalf("evidence order %s", got)
	}
	if node.SessionID != "s1" || node.TaskID != "t1" || node.Status != "RUNNING" || !node.OutputsUsed ||
		strings.Join(node.DoneTools, ",") != "query_space" || node.LastBusiness == nil || node.LastBusiness.Tool != "create_site" ||
		node.LastBusiness.Outcome != abi.OutcomeFailed || strings.Contains(string(node.Contract), "//") {
		t.Fatalf("node view %+v", node)
	}
	if len(conv.UserMessages) != 1 || fp.Limit != 3 || fp.StateDigest == "" {
		t.Fatalf("conversation %+v fingerprints %+v", conv, fp)
	}
	for _, k := range []abi.Capability{abi.CapStateLedger, abi.CapStateEntities, abi.CapStateFollowUp, abi.CapStateApproval} {
		if _, ok := v[string(k)]; !ok {
			t.Fatalf("no %s view", k)
		}
	}
	if string(v[string(abi.CapStateLedger)]) != `{"entries":[],"bypassTools":["ping"]}` {
		t.Fatalf("ledger view %s", v[string(abi.CapStateLedger)])
	}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"title":"Spring Launch", "spaceId":42}`)
	sum, err := services.Digest([]byte(`{"bound":{"spaceId":42,"title":"Spring Launch"}}`), "bound")
	if err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(sum[:])
	if ArgsDigest(args) != want {
		t.Fatalf("digest %s, want the digest service's %s", ArgsDigest(args), want)
	}
	suspend := func(m *Memory, digest string) {
		t.Helper()
		if err := m.Apply("n1", []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendApproval, Question: "q",
			Tool: "create_site", Args: args, ArgsDigest: digest})}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("confirm binds the digest", func(t *testing.T) {
		m := newStore(t)
		if _, err := m.Approve("n1", clock); !errors.Is(err, ErrNotSuspended) {
			t.Fatalf("approve a running node: %v", err)
		}
		if err := m.Gate("n1", "create_site", "c1", args); err != nil {
			t.Fatal(err)
		}
		suspend(m, string(want))
		g, err := m.Approve("n1", clock)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := m.Node("n1")
		if g.Tool != "create_site" || n.Status != Running || n.Approved == nil || n.Approved.ArgsDigest != string(want) {
			t.Fatalf("gated %+v node %+v", g, n)
		}
		v, _ := m.Views("n1")
		if !strings.Contains(string(v[string(abi.CapStateApproval)]), `"approved":{"tool":"create_site","argsDigest":"`+string(want)) {
			t.Fatalf("approval view %s", v[string(abi.CapStateApproval)])
		}
		_ = m.ClearApproval("n1")
		if n, _ := m.Node("n1"); n.Gated != nil || n.Approved != nil {
			t.Fatalf("not cleared: %+v", n)
		}
	})
	t.Run("changed arguments are refused", func(t *testing.T) {
		m := newStore(t)
		if err := m.Gate("n1", "create_site", "c1", args); err != nil {
			t.Fatal(err)
		}
		suspend(m, "other")
		if _, err := m.Approve("n1", clock); !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("nothing gated", func(t *testing.T) {
		m := newStore(t)
		suspend(m, string(want))
		if _, err := m.Approve("n1", clock); !errors.Is(err, ErrNotGated) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestFollowUp(t *testing.T) {
	t.Parallel()
	m := newStore(t)
	if _, err := m.AnswerFollowUp("n1", "x"); !errors.Is(err, ErrNotSuspended) {
		t.Fatalf("answer a running node: %v", err)
	}
	if err := m.Apply("n1", []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendFollowUp, Question: "网站标题？", ExpectedFields: []string{"title"}})}); err != nil {
		t.Fatal(err)
	}
	f, err := m.AnswerFollowUp("n1", "Spring Launch")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Views("n1")
	want := `{"current":{"question":"网站标题？","expectedFields":["title"],"answer":"Spring Launch"},"answered":[{"question":"网站标题？","expectedFields":["title"],"answer":"Spring Launch"}]}`
	if f.Answer != "Spring Launch" || string(v[string(abi.CapStateFollowUp)]) != want {
		t.Fatalf("follow-up view %s", v[string(abi.CapStateFollowUp)])
	}
	if !strings.Contains(string(v[string(abi.CapStateConversation)]), "Spring Launch") {
		t.Fatalf("conversation %s", v[string(abi.CapStateConversation)])
	}
	if n, _ := m.Node("n1"); n.Status != Running || n.Suspension != nil {
		t.Fatalf("node %+v", n)
	}
}

func TestMessagesAndErrors(t *testing.T) {
	t.Parallel()
	m := newStore(t)
	if err := m.AppendMessages("n1", model.Message{Role: model.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := m.Messages("n1")
	msgs[0].Content = "changed"
	if again, _ := m.Messages("n1"); again[0].Content != "hi" {
		t.Fatal("Messages is not a copy")
	}
	if _, err := m.Node("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateNode(Node{ID: "n1", TaskID: "t1"}); !errors.Is(err, ErrExists) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateNode(Node{ID: "n2", TaskID: "t1", Contract: json.RawMessage(`{"tools":`)}); err == nil {
		t.Fatal("a broken contract was accepted")
	}
	// A delegated node that ends settles its delegation record.
	_ = m.Apply("n1", []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query"}`)})
	_ = m.CreateNode(Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1"})
	_ = m.SetNodeStatus("pre", Cancelled, "user")
	if n, _ := m.Node("n1"); n.Delegations[0].Status != "CANCELLED" || n.Upstream[0] != "pre" {
		t.Fatalf("delegations %+v upstream %v", n.Delegations, n.Upstream)
	}
}
