package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

// firstPartyGrant is what a first-party plugin is granted, by its main
// package: its own capabilities.
var firstPartyGrant = func() map[string][]abi.Capability {
	out := map[string][]abi.Capability{}
	for _, p := range plugins.All {
		out["./"+p.Main] = p.Plugin.Manifest.Capabilities
	}
	return out
}()

// TestGrant loads plugins under grants: the manifest asking for a
// capability grants nothing, whoever loads the plugin does.
func TestGrant(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	own := writegate.Plugin.Manifest.Capabilities // state.ledger, state.approval, effect.ledger
	escalated := append(append([]abi.Capability{}, own...),
		abi.CapEffectNode, abi.CapEffectOutput, abi.CapStateConversation, abi.CapClock, abi.CapRandom)
	tests := []struct {
		name    string
		fixture string
		grant   []abi.Capability
		msg     string // "" loads
	}{
		{"WriteGate granted its own", "writegate-gatesread", own, ""},
		{"WriteGate granted more than it asks", "writegate-gatesread", append(append([]abi.Capability{}, own...), abi.CapClock), ""},
		{"WriteGate granted nothing", "writegate-gatesread", nil,
			"host: load writegate-gatesread: plugin asks for capabilities it is not granted: writegate@1.1.0 asks for state.ledger, state.approval, effect.ledger; it may have none (not granted: state.ledger, state.approval, effect.ledger)"},
		{"escalating WriteGate under WriteGate's grant", "writegate-escalate", own,
			"host: load writegate-escalate: plugin asks for capabilities it is not granted: writegate@1.2.0 asks for state.ledger, state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random; it may have state.ledger, state.approval, effect.ledger (not granted: effect.node, effect.output, state.conversation, clock, random)"},
		{"escalating WriteGate granted all it asks", "writegate-escalate", escalated, ""},
		{"a guard asking nothing granted nothing", "good", nil, ""},
		{"clock not granted", "slowinstance", nil,
			"host: load slowinstance: plugin asks for capabilities it is not granted: slowinstance@1.0.0 asks for clock; it may have none (not granted: clock)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := host.Source{Name: tt.fixture, Bytes: testdata.Bytes(t, tt.fixture)}
			p, err := h.Load(context.Background(), src, host.Policy{Capabilities: tt.grant})
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close(context.Background())
				if !reflect.DeepEqual(p.Grant(), p.Manifest().Capabilities) && len(p.Grant())+len(p.Manifest().Capabilities) > 0 {
					t.Errorf("Grant() = %v, want what it asked for, %v", p.Grant(), p.Manifest().Capabilities)
				}
				return
			}
			var ge *host.GrantError
			if err == nil || err.Error() != tt.msg || !errors.Is(err, host.ErrNotGranted) || !errors.As(err, &ge) {
				t.Fatalf("Load = %v\nwant %s", err, tt.msg)
			}
			// Verify (an install before anyone configures the plugin)
			// refuses it alike.
			if _, _, err := h.Verify(context.Background(), src, host.Policy{Capabilities: tt.grant}); !errors.Is(err, host.ErrNotGranted) {
				t.Errorf("Verify = %v, want ErrNotGranted", err)
			}
		})
	}
}

// TestGrantInspect: Inspect reads what a module asks for without granting
// it anything a load would not.
func TestGrantInspect(t *testing.T) {
	t.Parallel()
	info, err := host.Inspect(context.Background(), host.Source{Name: "writegate-escalate", Bytes: testdata.Bytes(t, "writegate-escalate")})
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.Capability{abi.CapStateLedger, abi.CapStateApproval, abi.CapEffectLedger,
		abi.CapEffectNode, abi.CapEffectOutput, abi.CapStateConversation, abi.CapClock, abi.CapRandom}
	if !reflect.DeepEqual(info.Capabilities, want) {
		t.Fatalf("Capabilities = %v, want %v", info.Capabilities, want)
	}
}

// TestGrantStateViews: only the state views granted travel to the plugin.
func TestGrantStateViews(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "writegate-gatesread", host.Policy{Capabilities: writegate.Plugin.Manifest.Capabilities})
	req := &abi.Request{Phase: abi.PhaseBefore, Tool: "create_site", Args: json.RawMessage(`{}`),
		Contract: json.RawMessage(`{"sideEffect":"WRITE"}`),
		State: map[string]json.RawMessage{
			string(abi.CapStateLedger): json.RawMessage(`{}`), string(abi.CapStateConversation): json.RawMessage(`{"secret":1}`),
		}}
	_ = p.Guard(context.Background(), "t", req)
	if _, ok := req.State[string(abi.CapStateConversation)]; ok {
		t.Error("state.conversation was sent to a plugin not granted it")
	}
	if _, ok := req.State[string(abi.CapStateLedger)]; !ok {
		t.Error("state.ledger was not sent to a plugin granted it")
	}
}

// TestDeclaredCodes: a plugin's own codes reach the observation namespaced,
// with their texts; a code shadowing a runtime code is refused at load; a
// code another plugin declared is a contract violation.
func TestDeclaredCodes(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	ctx := context.Background()

	dg := load(t, h, "declaredcode", host.Policy{})
	for _, tt := range []struct {
		locale abi.Locale
		want   abi.Observation
	}{
		{abi.LocaleZH, abi.Observation{Outcome: abi.OutcomeRejected, Code: "domainguard:DOMAIN_BLOCKED",
			Text: "域名 evil.org 不在允许的范围内", Next: "换用 example.com 下的域名", Locale: abi.LocaleZH}},
		{abi.LocaleEN, abi.Observation{Outcome: abi.OutcomeRejected, Code: "domainguard:DOMAIN_BLOCKED",
			Text: "domain evil.org is not allowed", Next: "use a domain under example.com", Locale: abi.LocaleEN}},
	} {
		req := &abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"evil.org"}`), Locale: tt.locale}
		v := dg.Guard(ctx, "t", req)
		if v.Pass || v.Observation == nil || !reflect.DeepEqual(*v.Observation, tt.want) {
			t.Fatalf("%s: verdict %+v, want %+v", tt.locale, v.Observation, tt.want)
		}
		if err := v.Observation.Validate(); err != nil {
			t.Errorf("the observation does not validate: %v", err)
		}
	}
	if v := dg.Guard(ctx, "t", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"spring.example.com"}`)}); !v.Pass {
		t.Fatalf("spring.example.com: %+v, want pass", v.Observation)
	}

	_, err := h.Load(ctx, host.Source{Name: "shadowcode", Bytes: testdata.Bytes(t, "shadowcode")}, host.Policy{})
	const shadow = `host: load shadowcode: bad plugin manifest: abi: manifest shadowcode: invalid manifest: codes[0] name "APPROVAL_REQUIRED" is a runtime code: a plugin's code cannot shadow it`
	if err == nil || err.Error() != shadow || !errors.Is(err, host.ErrManifest) {
		t.Fatalf("shadowcode: %v\nwant %s", err, shadow)
	}

	other := load(t, h, "othercode", host.Policy{})
	v := other.Guard(ctx, "t", &abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"evil.org"}`)})
	const want = "插件 othercode@1.0.0 违反结果约定：非成功结果的错误码未登记：domainguard:DOMAIN_BLOCKED。下一步：" + reportNext
	if v.Pass || v.Observation == nil || v.Observation.Code != abi.PluginContractViolation || v.Observation.Message() != want {
		t.Fatalf("othercode: %+v\nwant %s", v.Observation, want)
	}
}
