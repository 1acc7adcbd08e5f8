package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestAdminCapabilities: a first-party slot allows its own plugin's
// capabilities and no more. A WriteGate candidate asking for effect.node,
// effect.output, state.conversation, clock and random is refused through
// the admin API, as the first generation or as a swap, naming what it
// asked for and what the slot allows; one asking for WriteGate's own
// capabilities swaps in. Any other slot allows what the server's Policy
// grants: nothing by default.
func TestAdminCapabilities(t *testing.T) {
	f := newFixture(t)
	mods := firstPartyModules(t)
	wasm := func(b []byte) string {
		j, _ := json.Marshal(server.Install{Module: b})
		return string(j)
	}
	const escalateMsg = "writegate@1.2.0 asks for capabilities the slot does not allow: it asks for state.ledger, state.approval, " +
		"effect.ledger, effect.node, effect.output, state.conversation, clock, random; the slot allows state.ledger, state.approval, " +
		"effect.ledger (not allowed: effect.node, effect.output, state.conversation, clock, random)"
	escalate := install(t, "writegate-escalate", "")
	refusedMsg := func(id, msg string) string {
		return id + " refused by local: " + msg + "; no instance serves it, the desired generation stays"
	}
	steps := []struct {
		name, slot, body string
		status           int
		code, msg        string
		number           uint64 // serving generation afterwards; 0: no slot
	}{
		// A refused candidate keeps its number (its rollout's id).
		{"escalating first generation", "WriteGate", escalate, 403, server.CodeCapabilityNotGranted, refusedMsg("WriteGate@1", escalateMsg), 0},
		{"first-party WriteGate", "WriteGate", wasm(mods["writegate.wasm"]), 201, "", "", 2},
		{"escalating candidate", "WriteGate", escalate, 403, server.CodeCapabilityNotGranted, refusedMsg("WriteGate@3", escalateMsg), 2},
		{"a WriteGate with WriteGate's capabilities", "WriteGate", install(t, "writegate-gatesread", ""), 200, "", "", 4},
		{"another slot allows nothing", "Gate", escalate, 403, server.CodeCapabilityNotGranted, refusedMsg("Gate@1",
			"writegate@1.2.0 asks for capabilities the slot does not allow: it asks for state.ledger, state.approval, "+
				"effect.ledger, effect.node, effect.output, state.conversation, clock, random; the slot allows none "+
				"(not allowed: state.ledger, state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random)"), 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, eb := f.do(t, "PUT", "/admin/v1/slots/"+st.slot, keyAdmin, st.body, nil)
			if code != st.status || eb.Error.Code != st.code || eb.Error.Message != st.msg {
				t.Fatalf("got %d %s (%s)\nwant %d %s (%s)", code, eb.Error.Code, eb.Error.Message, st.status, st.code, st.msg)
			}
			var cur server.SlotInfo
			code, _ = f.do(t, "GET", "/admin/v1/slots/"+st.slot, keyAdmin, "", &cur)
			switch {
			case st.number == 0 && code != http.StatusNotFound:
				t.Fatalf("slot %s: %d, want none", st.slot, code)
			case st.number != 0 && cur.Current.Number != st.number:
				t.Fatalf("serving #%d, want #%d", cur.Current.Number, st.number)
			}
		})
	}
	var cur server.SlotInfo
	f.do(t, "GET", "/admin/v1/slots/WriteGate", keyAdmin, "", &cur)
	esc := host.Digest(testdata.Bytes(t, "writegate-escalate"))
	refused := 0
	for _, r := range cur.Refused {
		if r.Digest == esc && r.Origin == server.OriginAdmin {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("refusals of the escalating WriteGate: %d, want 2: %+v", refused, cur.Refused)
	}
}
