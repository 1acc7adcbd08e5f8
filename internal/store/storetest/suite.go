package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
)

// skill is a contract with a read and a gated write whose outputs are
// shared with the task and the session.
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
	args    = json.RawMessage(`{"title":"Spring Launch", "spaceId":42}`)
)

// Run runs the conformance suite. open returns a new, empty store made
// with Options(); each case opens its own, and the cases run in parallel.
func Run(t *testing.T, open func(t *testing.T) state.Store) {
	setup := func(t *testing.T) state.Store {
		t.Helper()
		s := open(t)
		must(t, s.CreateTask(state.Task{ID: "t1", Objective: "建站"}))
		must(t, s.CreateNode(state.Node{ID: "n1", TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(skill),
			ToolNames: []string{"query_space", "create_site"}}))
		return s
	}
	t.Run("Apply", func(t *testing.T) { t.Parallel(); testApply(t, setup) })
	t.Run("Views", func(t *testing.T) { t.Parallel(); testViews(t, setup) })
	t.Run("UpstreamEvidence", func(t *testing.T) { t.Parallel(); testUpstreamEvidence(t, setup) })
	t.Run("NodePlatform", func(t *testing.T) { t.Parallel(); testNodePlatform(t, setup) })
	t.Run("Approval", func(t *testing.T) { t.Parallel(); testApproval(t, setup) })
	t.Run("FollowUp", func(t *testing.T) { t.Parallel(); testFollowUp(t, setup) })
	t.Run("MessagesAndErrors", func(t *testing.T) { t.Parallel(); testMessagesAndErrors(t, setup) })
	t.Run("Atomicity", func(t *testing.T) { t.Parallel(); testAtomicity(t, setup) })
	t.Run("AtomicityInPlace", func(t *testing.T) { t.Parallel(); testAtomicityInPlace(t, setup) })
	t.Run("Concurrency", func(t *testing.T) { t.Parallel(); testConcurrency(t, setup) })
	t.Run("RecoverWrites", func(t *testing.T) { t.Parallel(); testRecoverWrites(t, setup) })
	t.Run("LegacyKey", func(t *testing.T) { t.Parallel(); testLegacyKey(t, setup) })
	t.Run("SameAsMemory", func(t *testing.T) { t.Parallel(); testSameAsMemory(t, open) })
	t.Run("Durability", func(t *testing.T) { t.Parallel(); testDurability(t, open) })
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks err is target and says text; a nil target wants no error.
func wantErr(t testing.TB, err, target error, text string) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Fatalf("err %v, want none", err)
	case target != nil && !errors.Is(err, target):
		t.Fatalf("err %v, want %v", err, target)
	case target != nil && !strings.Contains(err.Error(), text):
		t.Fatalf("err %q does not say %q", err, text)
	}
}

// testApply is one table of effect cases, long because each case is a row
// of the table, not a step of a procedure.
func testApply(t *testing.T, setup func(*testing.T) state.Store) {
	tests := []struct {
		name    string
		prior   []abi.Effect
		effects []abi.Effect
		err     error  // nil = applied
		errText string // substring of the error
		check   func(t *testing.T, m state.Store)
	}{
		{name: "reserve then settle a write", effects: []abi.Effect{reserve, settle}, check: func(t *testing.T, m state.Store) {
			l, _ := m.Ledger("t1")
			if len(l) != 1 || l[0].State != abi.LedgerSuccess || l[0].NodeID != "n1" || l[0].Result == nil || l[0].Result.Text != "ok" || !*l[0].BusinessOK {
				t.Fatalf("ledger %+v", l)
			}
		}},
		{name: "reserve is kept before the call", effects: []abi.Effect{reserve}, check: func(t *testing.T, m state.Store) {
			l, _ := m.Ledger("t1")
			if len(l) != 1 || l[0].State != abi.LedgerStarted || l[0].ArgsDigest != "d1" || l[0].CallID != "c1" || l[0].UpdatedAt != "2026-03-01T09:00:00Z" ||
				l[0].StartedAt != "2026-03-01T09:00:00Z" {
				t.Fatalf("ledger %+v", l)
			}
		}},
		{name: "reserve keeps the host's start time", effects: []abi.Effect{raw(abi.EffectLedgerReserve,
			`{"tool":"create_site","key":"k1","argsDigest":"d1","callId":"c1","startedAt":"2026-03-01T08:59:58.25Z"}`)}, check: func(t *testing.T, m state.Store) {
			l, _ := m.Ledger("t1")
			if len(l) != 1 || l[0].StartedAt != "2026-03-01T08:59:58.25Z" || l[0].UpdatedAt != "2026-03-01T09:00:00Z" {
				t.Fatalf("ledger %+v", l)
			}
		}},
		{name: "settle without a reservation", effects: []abi.Effect{settle}, err: state.ErrInvalidEffect, errText: "was not reserved"},
		{name: "reserve an open write again", prior: []abi.Effect{reserve}, effects: []abi.Effect{reserve}, err: state.ErrInvalidEffect, errText: "already STARTED"},
		{name: "reserve a write that succeeded", prior: []abi.Effect{reserve, settle}, effects: []abi.Effect{reserve}, err: state.ErrInvalidEffect, errText: "already SUCCESS"},
		{name: "reserve again after a failure", prior: []abi.Effect{reserve, raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"FAILED"}`)},
			effects: []abi.Effect{reserve}, check: func(t *testing.T, m state.Store) {
				if l, _ := m.Ledger("t1"); len(l) != 1 || l[0].State != abi.LedgerStarted {
					t.Fatalf("ledger %+v", l)
				}
			}},
		{name: "reserve again after a business failure", prior: []abi.Effect{reserve, raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"SUCCESS","businessOk":false}`)},
			effects: []abi.Effect{reserve}},
		{name: "ledger keeps its order", effects: []abi.Effect{reserve,
			raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k2","argsDigest":"d2"}`),
			raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"FAILED"}`), reserve}, check: func(t *testing.T, m state.Store) {
			if l, _ := m.Ledger("t1"); len(l) != 2 || l[0].Key != "k1" || l[1].Key != "k2" {
				t.Fatalf("ledger %+v", l)
			}
		}},
		{name: "settle to an unknown state", prior: []abi.Effect{reserve}, effects: []abi.Effect{raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"STARTED"}`)},
			err: state.ErrInvalidEffect, errText: `settle state "STARTED"`},
		{name: "reserve without a digest", effects: []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k1"}`)}, err: state.ErrInvalidEffect, errText: "argsDigest required"},
		{name: "fingerprint", effects: []abi.Effect{raw(abi.EffectFingerprintRecord, `{"tool":"q","argsDigest":"a","outcome":"SUCCESS"}`)}, check: func(t *testing.T, m state.Store) {
			if f, _ := m.Fingerprints("n1"); len(f) != 1 || f[0].Tool != "q" {
				t.Fatalf("fingerprints %+v", f)
			}
		}},
		{name: "fingerprint with a bad outcome", effects: []abi.Effect{raw(abi.EffectFingerprintRecord, `{"tool":"q","argsDigest":"a","outcome":"MAYBE"}`)}, err: state.ErrInvalidEffect},
		{name: "evidence gets the node", effects: []abi.Effect{item}, check: func(t *testing.T, m state.Store) {
			if ev, _ := m.Evidence("n1"); len(ev) != 1 || ev[0].NodeID != "n1" {
				t.Fatalf("evidence %+v", ev)
			}
		}},
		{name: "evidence of the same id replaces and goes last", effects: []abi.Effect{item,
			raw(abi.EffectEvidenceRegister, `{"id":"ev_2","tool":"q","status":"FAILED"}`),
			raw(abi.EffectEvidenceRegister, `{"id":"ev_1","tool":"q2","status":"SUCCESS"}`)}, check: func(t *testing.T, m state.Store) {
			if ev, _ := m.Evidence("n1"); len(ev) != 2 || ev[0].ID != "ev_2" || ev[1].ID != "ev_1" || ev[1].Tool != "q2" {
				t.Fatalf("evidence %+v", ev)
			}
		}},
		{name: "evidence of a call that never ran", effects: []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"e","tool":"q","status":"REJECTED"}`)},
			err: state.ErrInvalidEffect, errText: "only executed calls"},
		{name: "entity newest first, replacing", effects: []abi.Effect{
			raw(abi.EffectEntityRecord, `{"type":"space","id":"42","name":"市场部"}`),
			raw(abi.EffectEntityRecord, `{"type":"space","id":"7"}`),
			raw(abi.EffectEntityRecord, `{"type":"space","id":"42","name":"市场部2"}`)}, check: func(t *testing.T, m state.Store) {
			e := m.Entities()
			if len(e) != 2 || e[0].ID != "42" || e[0].Name != "市场部2" || e[0].TaskID != "t1" || e[1].ID != "7" {
				t.Fatalf("entities %+v", e)
			}
		}},
		{name: "entity without id", effects: []abi.Effect{raw(abi.EffectEntityRecord, `{"type":"space"}`)}, err: state.ErrInvalidEffect, errText: "type, id required"},
		{name: "suspend for approval", effects: []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendApproval, Question: "建站？", Tool: "create_site", ArgsDigest: "d"})},
			check: func(t *testing.T, m state.Store) {
				n, _ := m.Node("n1")
				if n.Status != state.Suspended || n.Suspension.Kind != abi.SuspendApproval || !n.Suspension.At.Equal(Clock) {
					t.Fatalf("node %+v", n)
				}
			}},
		{name: "approval without the gated call", effects: []abi.Effect{raw(abi.EffectNodeSuspend, `{"kind":"APPROVAL","question":"q"}`)}, err: state.ErrInvalidEffect},
		{name: "suspension of an unknown kind", effects: []abi.Effect{raw(abi.EffectNodeSuspend, `{"kind":"NAP","question":"q"}`)}, err: state.ErrInvalidEffect, errText: `kind "NAP"`},
		{name: "nothing after the node left RUNNING", effects: []abi.Effect{raw(abi.EffectNodeFail, `{"reason":"r"}`), raw(abi.EffectStateSet, `{"key":"a","value":1}`)},
			err: state.ErrNodeNotRunning, check: func(t *testing.T, m state.Store) {
				if n, _ := m.Node("n1"); n.Status != state.Running || n.Reason != "" {
					t.Fatalf("node %+v", n)
				}
			}},
		{name: "fail", effects: []abi.Effect{raw(abi.EffectNodeFail, `{"reason":"r"}`)}, check: func(t *testing.T, m state.Store) {
			if n, _ := m.Node("n1"); n.Status != state.Failed || n.Reason != "r" {
				t.Fatalf("node %+v", n)
			}
		}},
		{name: "finish shares outputs and records entities", effects: []abi.Effect{
			raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_7","sourceType":"EVIDENCE","sourceRef":"ev_1"}`),
			raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":42,"name":"市场部"},"sourceType":"EVIDENCE","sourceRef":"ev_1"}`),
			raw(abi.EffectNodeFinish, `{"output":"done"}`)}, check: func(t *testing.T, m state.Store) {
			n, _ := m.Node("n1")
			sh, _ := m.Shared("t1")
			if n.Status != state.Done || n.Output != "done" || string(sh["siteId"]) != `"site_7"` || string(m.SessionValues()["space"]) != `{"id":42,"name":"市场部"}` {
				t.Fatalf("node %+v shared %s session %s", n, sh, m.SessionValues())
			}
			if e := m.Entities(); len(e) != 1 || e[0].Type != "space" || e[0].ID != "42" || string(e[0].IDJSON) != "42" {
				t.Fatalf("entities %+v", e)
			}
		}},
		{name: "finish without output", effects: []abi.Effect{raw(abi.EffectNodeFinish, `{"output":" "}`)}, err: state.ErrInvalidEffect},
		{name: "delegate", effects: []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query","objective":"找空间"}`)}, check: func(t *testing.T, m state.Store) {
			if n, _ := m.Node("n1"); len(n.Delegations) != 1 || n.Delegations[0].Status != "PENDING" {
				t.Fatalf("delegations %+v", n.Delegations)
			}
		}},
		{name: "state.set", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":"note","value":{"a":1}}`)}, check: func(t *testing.T, m state.Store) {
			if n, _ := m.Node("n1"); string(n.Scratch["note"]) != `{"a":1}` {
				t.Fatalf("scratch %s", n.Scratch)
			}
		}},
		{name: "state.set of a reserved key", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":"_phase","value":1}`)}, err: state.ErrInvalidEffect, errText: "reserved"},
		{name: "output without a source", effects: []abi.Effect{raw(abi.EffectOutputWrite, `{"key":"siteId","value":1}`)}, err: state.ErrInvalidEffect},
		{name: "payload that is not JSON", effects: []abi.Effect{raw(abi.EffectStateSet, `{"key":`)}, err: state.ErrInvalidEffect},
		{name: "empty payload", effects: []abi.Effect{{Kind: abi.EffectStateSet}}, err: state.ErrInvalidEffect, errText: "empty payload"},
		{name: "unknown kind", effects: []abi.Effect{raw("node.teleport", `{}`)}, err: state.ErrUnknownEffect},
		{name: "all or nothing", effects: []abi.Effect{reserve, item, raw("node.teleport", `{}`)}, err: state.ErrUnknownEffect, check: func(t *testing.T, m state.Store) {
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
			m := setup(t)
			must(t, m.Apply("n1", tt.prior))
			wantErr(t, m.Apply("n1", tt.effects), tt.err, tt.errText)
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
	t.Run("unknown node", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		wantErr(t, m.Apply("nope", []abi.Effect{item}), state.ErrNotFound, "nope")
		must(t, m.Apply("nope", nil))
	})
}

func decodeView(t *testing.T, v map[string]json.RawMessage, k abi.Capability, dst any) {
	t.Helper()
	if err := json.Unmarshal(v[string(k)], dst); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
}

func testViews(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.CreateNode(state.Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1", Depth: 1}))
	must(t, m.AddUserMessage("帮我建一个网站"))
	must(t, m.Apply("pre", []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"ev_p","tool":"query_space","status":"SUCCESS","businessOk":true}`)}))
	must(t, m.Apply("n1", []abi.Effect{item, raw(abi.EffectEvidenceRegister, `{"id":"ev_2","tool":"create_site","status":"FAILED","result":"failure"}`)}))
	v, err := m.Views("n1")
	must(t, err)
	var node abi.NodeView
	var ev abi.EvidenceView
	var conv abi.ConversationView
	var fp abi.FingerprintView
	decodeView(t, v, abi.CapStateNode, &node)
	decodeView(t, v, abi.CapStateEvidence, &ev)
	decodeView(t, v, abi.CapStateConversation, &conv)
	decodeView(t, v, abi.CapStateFingerprints, &fp)
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
	if _, err := m.Views("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("views of an unknown node: %v", err)
	}
	// The conversation holds the last 20 user messages, oldest first.
	for i := range 25 {
		must(t, m.AddUserMessage(fmt.Sprint("m", i)))
	}
	v, err = m.Views("n1")
	must(t, err)
	decodeView(t, v, abi.CapStateConversation, &conv)
	if len(conv.UserMessages) != 20 || conv.UserMessages[0] != "m5" || conv.UserMessages[19] != "m24" {
		t.Fatalf("conversation %v", conv.UserMessages)
	}
}

// testUpstreamEvidence: a node's evidence view holds its whole upstream
// chain, delegates included (CONTRACT_SPEC §9), nearest first: n3 after n2
// after n1, n1 with a delegated pre-node that delegated one of its own;
// an upstream cycle a corrupt graph could hold is walked once.
func testUpstreamEvidence(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.CreateNode(state.Node{ID: "d1", TaskID: "t1", SkillKey: "space.query", ParentID: "n1", Depth: 1}))
	must(t, m.CreateNode(state.Node{ID: "d2", TaskID: "t1", SkillKey: "space.query", ParentID: "d1", Depth: 2}))
	must(t, m.CreateNode(state.Node{ID: "n2", TaskID: "t1", SkillKey: "site.builder", Upstream: []string{"n1"}}))
	must(t, m.CreateNode(state.Node{ID: "n3", TaskID: "t1", SkillKey: "site.builder", Upstream: []string{"n2", "gone"}}))
	must(t, m.CreateNode(state.Node{ID: "c1", TaskID: "t1", SkillKey: "site.builder", Upstream: []string{"c2"}}))
	must(t, m.CreateNode(state.Node{ID: "c2", TaskID: "t1", SkillKey: "site.builder", Upstream: []string{"c1", "n3"}}))
	for _, id := range []string{"d2", "d1", "n1", "n2", "n3"} {
		must(t, m.Apply(id, []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"ev_`+id+`","tool":"query_space","status":"SUCCESS","businessOk":true}`)}))
	}
	for _, tt := range []struct{ node, want string }{
		{"n3", "ev_n3,ev_n2,ev_n1,ev_d1,ev_d2"},
		{"n2", "ev_n2,ev_n1,ev_d1,ev_d2"},
		{"n1", "ev_n1,ev_d1,ev_d2"},
		{"d2", "ev_d2"},
		{"c1", "ev_n3,ev_n2,ev_n1,ev_d1,ev_d2"},
	} {
		v, err := m.Views(tt.node)
		must(t, err)
		var ev abi.EvidenceView
		decodeView(t, v, abi.CapStateEvidence, &ev)
		var ids []string
		for _, it := range ev.Items {
			ids = append(ids, it.ID)
		}
		if got := strings.Join(ids, ","); got != tt.want {
			t.Errorf("evidence of %s: %s, want %s", tt.node, got, tt.want)
		}
	}
}

// testNodePlatform: a node created with its round's login identity shows
// it in its node view (CONTRACT_SPEC §11), kept as stored; a node without
// one shows the store's.
func testNodePlatform(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.CreateNode(state.Node{ID: "n2", TaskID: "t1", SkillKey: "site.builder",
		Platform: map[string]json.RawMessage{"userId": json.RawMessage(`10086`), "organName": json.RawMessage(`"市场部"`)}}))
	for node, want := range map[string]string{"n2": `{"organName":"市场部","userId":10086}`, "n1": `{"tenant":"acme"}`} {
		v, err := m.Views(node)
		must(t, err)
		var view struct {
			Platform json.RawMessage `json:"platform"`
		}
		decodeView(t, v, abi.CapStateNode, &view)
		if string(view.Platform) != want {
			t.Errorf("platform of %s: %s, want %s", node, view.Platform, want)
		}
	}
	if n, err := m.Node("n2"); err != nil || string(n.Platform["userId"]) != "10086" {
		t.Fatalf("node %+v: %v", n, err)
	}
}

func suspendApproval(t *testing.T, m state.Store, digest string) {
	t.Helper()
	must(t, m.Apply("n1", []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendApproval, Question: "q",
		Tool: "create_site", Args: args, ArgsDigest: digest})}))
}

func testApproval(t *testing.T, setup func(*testing.T) state.Store) {
	want := state.ArgsDigest(args)
	t.Run("confirm binds the digest", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		if _, err := m.Approve("n1", Clock); !errors.Is(err, state.ErrNotSuspended) {
			t.Fatalf("approve a running node: %v", err)
		}
		must(t, m.Gate("n1", "create_site", "c1", args))
		if n, _ := m.Node("n1"); n.Gated == nil || string(n.Gated.Args) != string(args) || n.Gated.ArgsDigest != want || n.Gated.At != "2026-03-01T09:00:00Z" || n.Approved != nil {
			t.Fatalf("gated %+v", n.Gated)
		}
		suspendApproval(t, m, want)
		g, err := m.Approve("n1", Clock)
		must(t, err)
		n, _ := m.Node("n1")
		if g.Tool != "create_site" || g.CallID != "c1" || string(g.Args) != string(args) || n.Status != state.Running || n.Approved == nil || n.Approved.ArgsDigest != want {
			t.Fatalf("gated %+v node %+v", g, n)
		}
		v, _ := m.Views("n1")
		if !strings.Contains(string(v[string(abi.CapStateApproval)]), `"approved":{"tool":"create_site","argsDigest":"`+want) {
			t.Fatalf("approval view %s", v[string(abi.CapStateApproval)])
		}
		must(t, m.ClearApproval("n1"))
		if n, _ := m.Node("n1"); n.Gated != nil || n.Approved != nil {
			t.Fatalf("not cleared: %+v", n)
		}
	})
	t.Run("an approval is used once", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		must(t, m.Gate("n1", "create_site", "c1", args))
		suspendApproval(t, m, want)
		_, err := m.Approve("n1", Clock)
		must(t, err)
		if _, err := m.Approve("n1", Clock); !errors.Is(err, state.ErrNotSuspended) {
			t.Fatalf("second approve: %v", err)
		}
	})
	t.Run("gating again drops the approval", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		must(t, m.Gate("n1", "create_site", "c1", args))
		suspendApproval(t, m, want)
		_, err := m.Approve("n1", Clock)
		must(t, err)
		must(t, m.Gate("n1", "create_site", "c2", json.RawMessage(`{"title":"Other"}`)))
		if n, _ := m.Node("n1"); n.Approved != nil || n.Gated.CallID != "c2" {
			t.Fatalf("node %+v", n)
		}
		if err := m.Gate("n1", "", "c3", args); err == nil {
			t.Fatal("a gate without a tool was accepted")
		}
		if err := m.Gate("n1", "create_site", "c3", json.RawMessage(`{`)); err == nil {
			t.Fatal("a gate with broken arguments was accepted")
		}
	})
	t.Run("changed arguments are refused", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		must(t, m.Gate("n1", "create_site", "c1", args))
		suspendApproval(t, m, "other")
		if _, err := m.Approve("n1", Clock); !errors.Is(err, state.ErrDigestMismatch) {
			t.Fatalf("err %v", err)
		}
		if n, _ := m.Node("n1"); n.Status != state.Suspended || n.Approved != nil {
			t.Fatalf("node %+v", n)
		}
	})
	t.Run("nothing gated", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		suspendApproval(t, m, want)
		if _, err := m.Approve("n1", Clock); !errors.Is(err, state.ErrNotGated) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("resuspend", func(t *testing.T) {
		t.Parallel()
		m := setup(t)
		if err := m.Resuspend("n1", Clock); !errors.Is(err, state.ErrNotSuspended) {
			t.Fatalf("resuspend a running node: %v", err)
		}
		suspendApproval(t, m, want)
		later := Clock.Add(3600e9)
		must(t, m.Resuspend("n1", later))
		if n, _ := m.Node("n1"); !n.Suspension.At.Equal(later) || n.Suspension.Kind != abi.SuspendApproval {
			t.Fatalf("suspension %+v", n.Suspension)
		}
	})
}

func testFollowUp(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	if _, err := m.AnswerFollowUp("n1", "x"); !errors.Is(err, state.ErrNotSuspended) {
		t.Fatalf("answer a running node: %v", err)
	}
	must(t, m.Apply("n1", []abi.Effect{effect(abi.EffectNodeSuspend, abi.NodeSuspend{Kind: abi.SuspendFollowUp, Question: "网站标题？", ExpectedFields: []string{"title"}})}))
	f, err := m.AnswerFollowUp("n1", "Spring Launch")
	must(t, err)
	v, _ := m.Views("n1")
	want := `{"current":{"question":"网站标题？","expectedFields":["title"],"answer":"Spring Launch"},"answered":[{"question":"网站标题？","expectedFields":["title"],"answer":"Spring Launch"}]}`
	if f.Answer != "Spring Launch" || string(v[string(abi.CapStateFollowUp)]) != want {
		t.Fatalf("follow-up view %s", v[string(abi.CapStateFollowUp)])
	}
	if !strings.Contains(string(v[string(abi.CapStateConversation)]), "Spring Launch") {
		t.Fatalf("conversation %s", v[string(abi.CapStateConversation)])
	}
	if n, _ := m.Node("n1"); n.Status != state.Running || n.Suspension != nil {
		t.Fatalf("node %+v", n)
	}
}

func testMessagesAndErrors(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	if m.SessionID() != "s1" {
		t.Fatalf("session %q", m.SessionID())
	}
	must(t, m.AppendMessages("n1", model.Message{Role: model.RoleUser, Content: "hi"}))
	must(t, m.AppendMessages("n1", model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "query_space", Arguments: `{"a":1}`}}},
		model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "ok"}))
	msgs, _ := m.Messages("n1")
	if len(msgs) != 3 || msgs[1].ToolCalls[0].Name != "query_space" || msgs[2].ToolCallID != "c1" {
		t.Fatalf("messages %+v", msgs)
	}
	msgs[0].Content = "changed"
	if again, _ := m.Messages("n1"); again[0].Content != "hi" {
		t.Fatal("Messages is not a copy")
	}
	if _, err := m.Messages("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := m.Node("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := m.Task("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if err := m.SetTaskStatus("nope", state.Done); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := m.Ledger("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if _, err := m.Shared("nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateTask(state.Task{ID: "t1"}); !errors.Is(err, state.ErrExists) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateNode(state.Node{ID: "n1", TaskID: "t1"}); !errors.Is(err, state.ErrExists) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateNode(state.Node{ID: "n9", TaskID: "nope"}); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if err := m.CreateNode(state.Node{ID: "n2", TaskID: "t1", Contract: json.RawMessage(`{"tools":`)}); err == nil {
		t.Fatal("a broken contract was accepted")
	}
	if tk, err := m.Task("t1"); err != nil || tk.Status != state.Running || tk.Objective != "建站" {
		t.Fatalf("task %+v %v", tk, err)
	}
	must(t, m.SetTaskStatus("t1", state.Suspended))
	if tk, _ := m.Task("t1"); tk.Status != state.Suspended || tk.Graph != nil {
		t.Fatalf("task %+v", tk)
	}
	must(t, m.SetTaskGraph("t1", json.RawMessage(`{"plan":{"nodes":[{"id":"n1"}]}}`)))
	must(t, m.SetTaskGraph("t1", json.RawMessage(`{"plan":{"nodes":[{"id":"n1"}]},"waiting":{"t1.n1":"t1.n1.d0"}}`)))
	if tk, _ := m.Task("t1"); string(tk.Graph) != `{"plan":{"nodes":[{"id":"n1"}]},"waiting":{"t1.n1":"t1.n1.d0"}}` {
		t.Fatalf("graph %s", tk.Graph)
	}
	if err := m.SetTaskGraph("nope", json.RawMessage(`{}`)); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
	if err := m.SetTaskGraph("t1", json.RawMessage(`{"plan":`)); err == nil || !strings.Contains(err.Error(), "graph is not JSON") {
		t.Fatalf("err %v", err)
	}
	must(t, m.SetTarget("n1", "create_site", true))
	must(t, m.SetProgress("n1", 2, 5))
	if n, _ := m.Node("n1"); n.Target != "create_site" || !n.TargetClaimed || n.Stalls != 2 || n.Rounds != 5 || n.SkillKey != "site.builder" ||
		strings.Join(n.ToolNames, ",") != "query_space,create_site" || n.Outputs == nil || n.Scratch == nil || strings.Contains(string(n.Contract), "//") {
		t.Fatalf("node %+v", n)
	}
	// A delegated node that ends settles its delegation record.
	must(t, m.Apply("n1", []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query"}`)}))
	must(t, m.CreateNode(state.Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1"}))
	must(t, m.SetNodeStatus("pre", state.Cancelled, "user"))
	if n, _ := m.Node("n1"); n.Delegations[0].Status != "CANCELLED" || n.Upstream[0] != "pre" {
		t.Fatalf("delegations %+v upstream %v", n.Delegations, n.Upstream)
	}
	if n, _ := m.Node("pre"); n.Status != state.Cancelled || n.Reason != "user" {
		t.Fatalf("node %+v", n)
	}
}

// testAtomicity applies a call that touches every table and fails at its
// last effect: nothing of it may be left.
func testAtomicity(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.CreateNode(state.Node{ID: "pre", TaskID: "t1", SkillKey: "space.query", ParentID: "n1"}))
	must(t, m.Apply("n1", []abi.Effect{raw(abi.EffectNodeDelegate, `{"skillKey":"space.query"}`)}))
	before := Snapshot(t, m)
	bad := []abi.Effect{
		reserve, item,
		raw(abi.EffectEntityRecord, `{"type":"space","id":"9"}`),
		raw(abi.EffectFingerprintRecord, `{"tool":"q","argsDigest":"a","outcome":"SUCCESS"}`),
		raw(abi.EffectStateSet, `{"key":"note","value":1}`),
		raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_7","sourceType":"EVIDENCE"}`),
		raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":42},"sourceType":"EVIDENCE"}`),
		raw(abi.EffectNodeFinish, `{"output":"done"}`),
		raw(abi.EffectStateSet, `{"key":"late","value":1}`),
	}
	for _, tt := range []struct {
		node    string
		effects []abi.Effect
		err     error
	}{
		{"n1", bad, state.ErrNodeNotRunning},
		{"n1", append(slices.Clone(bad[:7]), raw(abi.EffectLedgerSettle, `{"tool":"other","key":"k","state":"SUCCESS"}`)), state.ErrInvalidEffect},
		{"pre", []abi.Effect{item, raw(abi.EffectNodeFail, `{"reason":"r"}`), raw("node.teleport", `{}`)}, state.ErrNodeNotRunning},
		{"pre", []abi.Effect{item, raw("node.teleport", `{}`)}, state.ErrUnknownEffect},
	} {
		if err := m.Apply(tt.node, tt.effects); !errors.Is(err, tt.err) {
			t.Fatalf("apply: %v, want %v", err, tt.err)
		}
		if after := Snapshot(t, m); !maps.Equal(before, after) {
			t.Fatalf("a failed Apply changed the state:\n%s", diff(before, after))
		}
	}
}

// testAtomicityInPlace fails a call whose effects change records that
// exist already (a FAILED write reserved again, an evidence item and an
// entity replaced, a shared value and a scratch key overwritten): each is
// as it was.
func testAtomicityInPlace(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.Apply("n1", []abi.Effect{reserve, item,
		raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k1","state":"FAILED"}`),
		raw(abi.EffectEntityRecord, `{"type":"space","id":"9","name":"old"}`),
		raw(abi.EffectEntityRecord, `{"type":"space","id":"8"}`),
		raw(abi.EffectStateSet, `{"key":"note","value":1}`)}))
	must(t, m.CreateNode(state.Node{ID: "n0", TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(skill)}))
	must(t, m.Apply("n0", []abi.Effect{
		raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_1","sourceType":"EVIDENCE"}`),
		raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":41},"sourceType":"EVIDENCE"}`),
		raw(abi.EffectNodeFinish, `{"output":"done"}`)}))
	before := Snapshot(t, m)
	bad := []abi.Effect{
		raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k1","argsDigest":"d2","callId":"c2"}`),
		raw(abi.EffectEvidenceRegister, `{"id":"ev_1","tool":"query_space","status":"FAILED","empty":true}`),
		raw(abi.EffectEntityRecord, `{"type":"space","id":"9","name":"new"}`),
		raw(abi.EffectStateSet, `{"key":"note","value":2}`),
		raw(abi.EffectOutputWrite, `{"key":"siteId","value":"site_2","sourceType":"EVIDENCE"}`),
		raw(abi.EffectOutputWrite, `{"key":"space","value":{"id":42},"sourceType":"EVIDENCE"}`),
		raw(abi.EffectNodeFinish, `{"output":"done"}`),
		raw(abi.EffectStateSet, `{"key":"late","value":1}`),
	}
	if err := m.Apply("n1", bad); !errors.Is(err, state.ErrNodeNotRunning) {
		t.Fatalf("apply: %v, want %v", err, state.ErrNodeNotRunning)
	}
	if after := Snapshot(t, m); !maps.Equal(before, after) {
		t.Fatalf("a failed Apply changed the state:\n%s", diff(before, after))
	}
	for k, want := range map[string]string{"shared t1": `{"siteId":"site_1"}`, "session values": `{"space":{"id":41}}`} {
		if before[k] != want {
			t.Fatalf("%s %s, want %s", k, before[k], want)
		}
	}
}

// testConcurrency applies calls on different nodes at once.
func testConcurrency(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	const nodes, calls = 6, 8
	for i := range nodes {
		must(t, m.CreateNode(state.Node{ID: fmt.Sprint("c", i), TaskID: "t1", SkillKey: "site.builder", Contract: json.RawMessage(skill)}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, nodes*(2*calls+1))
	for i := range nodes {
		wg.Go(func() {
			id := fmt.Sprint("c", i)
			for j := range calls {
				errs <- m.Apply(id, []abi.Effect{
					raw(abi.EffectEvidenceRegister, fmt.Sprintf(`{"id":"ev_%d_%d","tool":"query_space","status":"SUCCESS","businessOk":true}`, i, j)),
					raw(abi.EffectLedgerReserve, fmt.Sprintf(`{"tool":"create_site","key":"k_%d_%d","argsDigest":"d"}`, i, j)),
					raw(abi.EffectFingerprintRecord, `{"tool":"query_space","argsDigest":"a","outcome":"SUCCESS"}`),
					raw(abi.EffectEntityRecord, fmt.Sprintf(`{"type":"space","id":"%d_%d"}`, i, j)),
					raw(abi.EffectStateSet, fmt.Sprintf(`{"key":"k%d","value":%d}`, j, j)),
				})
				errs <- m.AppendMessages(id, model.Message{Role: model.RoleUser, Content: fmt.Sprint(j)})
			}
			errs <- m.Apply(id, []abi.Effect{
				raw(abi.EffectOutputWrite, fmt.Sprintf(`{"key":"siteId","value":"site_%d","sourceType":"EVIDENCE"}`, i)),
				raw(abi.EffectOutputWrite, fmt.Sprintf(`{"key":"space","value":{"id":%d},"sourceType":"EVIDENCE"}`, i)),
				raw(abi.EffectNodeFinish, `{"output":"done"}`)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	l, _ := m.Ledger("t1")
	if len(l) != nodes*calls {
		t.Fatalf("ledger has %d entries, want %d", len(l), nodes*calls)
	}
	if e := m.Entities(); len(e) != nodes*calls+nodes {
		t.Fatalf("%d entities, want %d", len(e), nodes*calls+nodes)
	}
	for i := range nodes {
		id := fmt.Sprint("c", i)
		n, _ := m.Node(id)
		ev, _ := m.Evidence(id)
		fp, _ := m.Fingerprints(id)
		msgs, _ := m.Messages(id)
		if n.Status != state.Done || len(n.Scratch) != calls || len(ev) != calls || len(fp) != calls || len(msgs) != calls {
			t.Fatalf("node %s: status %s, %d scratch, %d evidence, %d fingerprints, %d messages", id, n.Status, len(n.Scratch), len(ev), len(fp), len(msgs))
		}
		for j, msg := range msgs {
			if msg.Content != fmt.Sprint(j) {
				t.Fatalf("node %s: messages out of order: %+v", id, msgs)
			}
		}
	}
}

func testRecoverWrites(t *testing.T, setup func(*testing.T) state.Store) {
	m := setup(t)
	must(t, m.CreateTask(state.Task{ID: "t0"}))
	must(t, m.CreateNode(state.Node{ID: "n0", TaskID: "t0"}))
	// Reserved and called, never settled: the process died in between.
	must(t, m.Apply("n1", []abi.Effect{reserve, raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k2","argsDigest":"d2","callId":"c2","startedAt":"2026-03-01T08:59:58.25Z"}`)}))
	must(t, m.Apply("n1", []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k3","argsDigest":"d3","callId":"c3"}`),
		raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"k3","state":"UNKNOWN"}`)}))
	must(t, m.Apply("n0", []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k0","argsDigest":"d0","callId":"c0"}`)}))
	must(t, m.RecordCall("t1", "c1", args))
	if err := m.RecordCall("nope", "c1", args); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("record call of an unknown task: %v", err)
	}
	if err := m.RecordCall("t1", "", args); err == nil {
		t.Fatal("a call without an id was recorded")
	}
	if r, ok := m.(Reopener); ok {
		m = r.Reopen(t)
	}
	got, err := m.RecoverWrites()
	must(t, err)
	var keys []string
	for _, e := range got {
		if e.State != abi.LedgerUnknownPreCall || e.StartedAt == "" {
			t.Fatalf("recovered %+v", e)
		}
		keys = append(keys, e.Key)
	}
	if strings.Join(keys, ",") != "k0,k1,k2" {
		t.Fatalf("recovered %v, want k0,k1,k2 (task order, then ledger order)", keys)
	}
	if again, err := m.RecoverWrites(); err != nil || len(again) != 0 {
		t.Fatalf("recovered twice: %+v %v", again, err)
	}
	l, _ := m.Ledger("t1")
	if len(l) != 3 || l[0].State != abi.LedgerUnknownPreCall || l[2].State != abi.LedgerUnknown {
		t.Fatalf("ledger %+v", l)
	}
	// An uncertain write is never issued again before it is verified.
	wantErr(t, m.Apply("n1", []abi.Effect{reserve}), state.ErrInvalidEffect, "already UNKNOWN_PRE_CALL")
	if a, ok := m.CallArgs("t1", "c1"); !ok || string(a) != string(args) {
		t.Fatalf("call args %s %v", a, ok)
	}
	if _, ok := m.CallArgs("t1", "c9"); ok {
		t.Fatal("args of a call never recorded")
	}
	// Verified: it took.
	res := abi.Success("建站成功", json.RawMessage(`{"siteId":"s7"}`))
	must(t, m.SettleUncertain("t1", "create_site", "k1", true, &res))
	wantErr(t, m.SettleUncertain("t1", "create_site", "k1", true, &res), state.ErrNotUncertain, "")
	wantErr(t, m.SettleUncertain("nope", "create_site", "k1", true, &res), state.ErrNotFound, "")
	ev, _ := m.Evidence("n1")
	if len(ev) != 1 || ev[0].Tool != "create_site" || ev[0].ToolCallID != "c1" || !ev[0].BusinessOK || string(ev[0].Payload) != `{"siteId":"s7"}` {
		t.Fatalf("evidence %+v", ev)
	}
	// Recovery and verification keep when the write started: a negative
	// verification is judged against it.
	if l, _ := m.Ledger("t1"); l[1].StartedAt != "2026-03-01T08:59:58.25Z" {
		t.Fatalf("recovered entry lost its start: %+v", l[1])
	}
	// Verified: it did not take; it may be issued again.
	must(t, m.SettleUncertain("t1", "create_site", "k2", false, nil))
	if l, _ := m.Ledger("t1"); l[1].StartedAt != "2026-03-01T08:59:58.25Z" {
		t.Fatalf("settled entry lost its start: %+v", l[1])
	}
	// The write that came back UNKNOWN had evidence: it now reads as done.
	must(t, m.Apply("n1", []abi.Effect{raw(abi.EffectEvidenceRegister, `{"id":"ev_3","tool":"create_site","status":"FAILED","toolCallId":"c3","empty":true}`)}))
	must(t, m.SettleUncertain("t1", "create_site", "k3", true, nil))
	l, _ = m.Ledger("t1")
	if l[0].State != abi.LedgerSuccess || !*l[0].BusinessOK || l[0].Result == nil || l[0].Result.Text != "建站成功" ||
		l[1].State != abi.LedgerFailed || *l[1].BusinessOK || l[2].State != abi.LedgerSuccess {
		t.Fatalf("ledger %+v", l)
	}
	ev, _ = m.Evidence("n1")
	if len(ev) != 2 || ev[1].ID != "ev_3" || ev[1].Status != abi.OutcomeSuccess || !ev[1].BusinessOK || ev[1].Empty {
		t.Fatalf("evidence %+v", ev)
	}
	must(t, m.Apply("n1", []abi.Effect{raw(abi.EffectLedgerReserve, `{"tool":"create_site","key":"k2","argsDigest":"d2","callId":"c4"}`)}))
	wantErr(t, m.Apply("n1", []abi.Effect{reserve}), state.ErrInvalidEffect, "already SUCCESS")
}

// testLegacyKey: a write reserved before the canonical form became RFC
// 8785's has its ledger entry under the key's old form. After the upgrade
// WriteGate reserves the same write with the new key and the old one
// (legacyKey): an open or succeeded entry under the old key still refuses
// it; a failed one lets it be reserved again, under the new key.
func testLegacyKey(t *testing.T, setup func(*testing.T) state.Store) {
	tool := &contract.Tool{Name: "create_site"}
	args := []byte(`{"title":"Spring Launch","budget":1234567.5,"note":"a\u0001"}`)
	oldKey, newKey := tool.LegacyKeyFor(args), tool.KeyFor(args)
	if oldKey == newKey {
		t.Fatal("the arguments give one key in both forms; the test needs two")
	}
	// What the gate reserved before the upgrade, and after it.
	before := effect(abi.EffectLedgerReserve, abi.LedgerReserve{Tool: "create_site", Key: oldKey, ArgsDigest: "d0", CallID: "c0"})
	after := effect(abi.EffectLedgerReserve, abi.LedgerReserve{Tool: "create_site", Key: newKey, LegacyKey: oldKey, ArgsDigest: "d1", CallID: "c1"})
	settleOld := func(state string, ok string) abi.Effect {
		return raw(abi.EffectLedgerSettle, `{"tool":"create_site","key":"`+oldKey+`","state":"`+state+`"`+ok+`}`)
	}
	for _, tt := range []struct {
		name    string
		prior   []abi.Effect
		errText string // "" = reserved under the new key
	}{
		{"started before the upgrade", []abi.Effect{before}, "already STARTED"},
		{"succeeded before the upgrade", []abi.Effect{before, settleOld("SUCCESS", `,"businessOk":true`)}, "already SUCCESS"},
		{"uncertain before the upgrade", []abi.Effect{before, settleOld("UNKNOWN", "")}, "already UNKNOWN"},
		{"failed before the upgrade", []abi.Effect{before, settleOld("FAILED", "")}, ""},
		{"business failure before the upgrade", []abi.Effect{before, settleOld("SUCCESS", `,"businessOk":false`)}, ""},
		{"no entry", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := setup(t)
			if len(tt.prior) > 0 {
				must(t, m.Apply("n1", tt.prior))
			}
			prior, _ := m.Ledger("t1")
			err := m.Apply("n1", []abi.Effect{after})
			l, _ := m.Ledger("t1")
			if tt.errText != "" {
				wantErr(t, err, state.ErrInvalidEffect, tt.errText)
				if len(l) != 1 || l[0].Key != oldKey || !slices.EqualFunc(l, prior, func(a, b abi.LedgerEntry) bool { return a.State == b.State && a.CallID == b.CallID }) {
					t.Fatalf("ledger changed: %+v", l)
				}
				return
			}
			must(t, err)
			if n := len(l); n != len(prior)+1 || l[n-1].Key != newKey || l[n-1].State != abi.LedgerStarted || l[n-1].CallID != "c1" {
				t.Fatalf("ledger %+v", l)
			}
			// The new entry is the write's from now on: a duplicate is refused.
			wantErr(t, m.Apply("n1", []abi.Effect{after}), state.ErrInvalidEffect, "already STARTED")
		})
	}
}
