package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
)

func TestEffectCapability(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind string
		want abi.Capability
	}{
		{abi.EffectLedgerReserve, abi.CapEffectLedger},
		{abi.EffectLedgerSettle, abi.CapEffectLedger},
		{abi.EffectFingerprintRecord, abi.CapEffectFingerprint},
		{abi.EffectEvidenceRegister, abi.CapEffectEvidence},
		{abi.EffectEntityRecord, abi.CapEffectEvidence},
		{abi.EffectNodeSuspend, abi.CapEffectNode},
		{abi.EffectNodeFinish, abi.CapEffectNode},
		{abi.EffectNodeFail, abi.CapEffectNode},
		{abi.EffectNodeDelegate, abi.CapEffectNode},
		{abi.EffectOutputWrite, abi.CapEffectOutput},
		{abi.EffectStateSet, abi.CapEffectState},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			got, err := abi.EffectCapability(tt.kind)
			if err != nil || got != tt.want {
				t.Errorf("EffectCapability(%q) = %q, %v; want %q, nil", tt.kind, got, err, tt.want)
			}
			if !got.Known() || got.IsStateView() {
				t.Errorf("%q: Known %v IsStateView %v", got, got.Known(), got.IsStateView())
			}
		})
	}
	for _, kind := range []string{"", "ledger", "ledger.burn", "Ledger.Reserve", "effect.ledger"} {
		t.Run("unknown "+kind, func(t *testing.T) {
			t.Parallel()
			got, err := abi.EffectCapability(kind)
			if !errors.Is(err, abi.ErrUnknownEffect) {
				t.Fatalf("EffectCapability(%q) = %q, %v; want ErrUnknownEffect", kind, got, err)
			}
			if want := `abi: effect "` + kind + `": unknown effect kind`; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
		})
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c     abi.Capability
		known bool
		state bool
	}{
		{abi.CapClock, true, false},
		{abi.CapRandom, true, false},
		{abi.CapStateLedger, true, true},
		{abi.CapStateFingerprints, true, true},
		{abi.CapStateEvidence, true, true},
		{abi.CapStateEntities, true, true},
		{abi.CapStateNode, true, true},
		{abi.CapStateSession, true, true},
		{abi.CapStateConversation, true, true},
		{abi.CapStateFollowUp, true, true},
		{abi.CapStateApproval, true, true},
		{abi.CapStateCatalog, true, true},
		{abi.CapEffectLedger, true, false},
		{abi.CapEffectFingerprint, true, false},
		{abi.CapEffectEvidence, true, false},
		{abi.CapEffectNode, true, false},
		{abi.CapEffectOutput, true, false},
		{abi.CapEffectState, true, false},
		{"network", false, false},
		{"state.secrets", false, true},
		{"", false, false},
		{"Clock", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.c), func(t *testing.T) {
			t.Parallel()
			if got := tt.c.Known(); got != tt.known {
				t.Errorf("Known() = %v, want %v", got, tt.known)
			}
			if got := tt.c.IsStateView(); got != tt.state {
				t.Errorf("IsStateView() = %v, want %v", got, tt.state)
			}
		})
	}
}

func TestRequestJSON(t *testing.T) {
	t.Parallel()
	res := abi.Success("ok", nil)
	req := abi.Request{
		ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseAfter, Tool: "create_site", CallID: "c1",
		Args: json.RawMessage(`{"name":"a"}`), Provenance: map[string]string{"name": "USER"},
		State:  map[string]json.RawMessage{string(abi.CapStateLedger): json.RawMessage(`[]`)},
		Result: &res, Locale: abi.LocaleEN,
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	want := `{"abi":1,"kind":"guard","phase":"after","tool":"create_site","callId":"c1","args":{"name":"a"},` +
		`"provenance":{"name":"USER"},"state":{"state.ledger":[]},"result":{"outcome":"SUCCESS","text":"ok","message":"ok"},"locale":"en"}`
	if string(b) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", b, want)
	}
	var back abi.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(back, req) {
		t.Errorf("round trip = %+v, want %+v", back, req)
	}
	// The Field* paths name the JSON keys.
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(b, &keys)
	for _, f := range []string{abi.FieldTool, abi.FieldPhase, abi.FieldCallID, abi.FieldArgs, abi.FieldProvenance, abi.FieldState, abi.FieldResult, abi.FieldLocale} {
		if _, ok := keys[f]; !ok {
			t.Errorf("field %q not in %s", f, b)
		}
	}
}

func TestVerdictJSON(t *testing.T) {
	t.Parallel()
	obs := abi.Rejected(abi.CatalogDenied, "工具 x 不在本节点可调用范围内", "只调用本节点工具目录中的工具")
	tests := []struct {
		name string
		v    abi.Verdict
		want string
	}{
		{"pass", abi.Verdict{Pass: true, Args: json.RawMessage(`{"a":1}`), Facts: []abi.Fact{{Path: "a", Source: "USER"}}},
			`{"pass":true,"args":{"a":1},"facts":[{"path":"a","source":"USER"}]}`},
		{"observation with effect", abi.Verdict{Observation: &obs, Effects: []abi.Effect{{Kind: abi.EffectFingerprintRecord, Payload: json.RawMessage(`{"k":"v"}`)}}},
			`{"observation":{"outcome":"REJECTED","code":"CATALOG_DENIED","text":"工具 x 不在本节点可调用范围内","next":"只调用本节点工具目录中的工具","wire":"agent_runtime.40027","category":"tool_choice","signal":"change","message":"工具 x 不在本节点可调用范围内。下一步：只调用本节点工具目录中的工具"},"effects":[{"kind":"fingerprint.record","payload":{"k":"v"}}]}`},
		{"empty", abi.Verdict{}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal =\n%s\nwant\n%s", b, tt.want)
			}
			var back abi.Verdict
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back, tt.v) {
				t.Errorf("round trip = %+v, want %+v", back, tt.v)
			}
		})
	}
}
