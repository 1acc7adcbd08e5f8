package chain_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
)

// policied is a tenant guard stand-in with a failure policy and a fixed
// verdict.
type policied struct {
	name    string
	failure host.FailurePolicy
	v       abi.Verdict
}

func (p policied) Name() string                                            { return p.name }
func (p policied) FailurePolicy() host.FailurePolicy                       { return p.failure }
func (p policied) Identity() (string, uint64)                              { return p.name, 0 }
func (p policied) Guard(context.Context, string, *abi.Request) abi.Verdict { return p.v }

func observed(o abi.Observation) abi.Verdict { return abi.Verdict{Observation: &o} }

// TestFailurePolicy checks that the chain applies a tenant guard's failure
// policy and keeps the guard's own verdict in its step: closed applies
// everything, open lets only the guard's own failure through, shadow
// applies nothing.
func TestFailurePolicy(t *testing.T) {
	t.Parallel()
	refusal := observed(abi.Rejected(abi.ArgRejected, "domain evil.org is not the tenant's", "ask the user for another domain"))
	trap := observed(abi.Rejected(abi.PluginTrap, "plugin domainguard@0.1.0 trapped: boom", "retry once later"))
	rewrite := abi.Verdict{Pass: true, Args: json.RawMessage(`{"domain":"rewritten.example.com"}`),
		Facts:   []abi.Fact{{Path: "domain", Source: "CONTRACT"}},
		Effects: []abi.Effect{{Kind: abi.EffectLedgerReserve, Payload: json.RawMessage(`{}`)}}}
	tests := []struct {
		name    string
		failure host.FailurePolicy
		v       abi.Verdict
		invoked bool
		code    abi.Code // of the call's observation
		policy  host.FailurePolicy
		verdict string // the step's
		args    string // what the tool received
	}{
		{"closed refusal", host.FailClosed, refusal, false, abi.ArgRejected, "", "REJECTED ARG_REJECTED", ""},
		{"closed failure", host.FailClosed, trap, false, abi.PluginTrap, "", "REJECTED PLUGIN_TRAP", ""},
		{"open refusal stands", host.FailOpen, refusal, false, abi.ArgRejected, "", "REJECTED ARG_REJECTED", ""},
		{"open failure lets through", host.FailOpen, trap, true, "", host.FailOpen, "REJECTED PLUGIN_TRAP", `{"domain":"evil.org"}`},
		{"open rewrite applies", host.FailOpen, rewrite, true, "", "", "rewrite", `{"domain":"rewritten.example.com"}`},
		{"shadow refusal recorded", host.Shadow, refusal, true, "", host.Shadow, "REJECTED ARG_REJECTED", `{"domain":"evil.org"}`},
		{"shadow failure recorded", host.Shadow, trap, true, "", host.Shadow, "REJECTED PLUGIN_TRAP", `{"domain":"evil.org"}`},
		{"shadow rewrite not applied", host.Shadow, rewrite, true, "", host.Shadow, "rewrite", `{"domain":"evil.org"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := policied{"domainguard@0.1.0", tt.failure, tt.v}
			first := map[string]chain.Guard{}
			for _, n := range append(append([]string{}, chain.FirstPartyBefore...), chain.FirstPartyAfter...) {
				first[n] = pass(n)
			}
			ch, err := chain.New(first, []chain.Placement{{Guard: g, Phase: abi.PhaseBefore, Position: "after:ParamContract"}}, &chain.Invoker{Caller: echo{}})
			if err != nil {
				t.Fatal(err)
			}
			res := ch.Run(context.Background(), chain.Call{Tenant: "acme", Tool: "create_website", Args: []byte(`{"domain":"evil.org"}`)})
			if res.Invoked != tt.invoked {
				t.Fatalf("invoked %v, want %v (%+v)", res.Invoked, tt.invoked, res.Observation)
			}
			var s *chain.Step
			for i := range res.Trace {
				if res.Trace[i].Guard == g.name {
					s = &res.Trace[i]
				}
			}
			if s == nil || s.Policy != tt.policy || s.Verdict != tt.verdict || s.Plugin != g.name {
				t.Fatalf("step %+v, want policy %q verdict %q", s, tt.policy, tt.verdict)
			}
			if tt.policy != "" && (tt.v.Observation == nil) != (s.Observation == nil) {
				t.Fatalf("a step set aside must keep the guard's observation: %+v", s)
			}
			if !tt.invoked {
				if res.Observation.Code != tt.code || res.Decider == nil || res.Decider.Guard != g.name {
					t.Fatalf("observation %s decided by %+v, want %s by %s", res.Observation.Code, res.Decider, tt.code, g.name)
				}
				if tt.code == abi.ArgRejected && res.Observation.Message() != "domain evil.org is not the tenant's。下一步：ask the user for another domain" {
					t.Fatalf("the guard's reason and next step must reach the model: %q", res.Observation.Message())
				}
				return
			}
			if res.Observation.Outcome != abi.OutcomeSuccess || res.Decider != nil {
				t.Fatalf("the tool's result must stand: %+v decided by %+v", res.Observation, res.Decider)
			}
			if string(res.Args) != tt.args {
				t.Fatalf("the tool received %s, want %s", res.Args, tt.args)
			}
			if tt.policy == host.Shadow && (len(res.Effects) > 0 || len(res.Provenance) > 0) {
				t.Fatalf("a shadow guard's effects and facts must be dropped: %+v %+v", res.Effects, res.Provenance)
			}
		})
	}
}

// TestDecider checks which guard the result names: an after guard that
// replaced the tool's result, or none when it stands.
func TestDecider(t *testing.T) {
	t.Parallel()
	failed := observed(abi.Failed(abi.ToolBusinessFailed, "business failure: no quota", "tell the user"))
	first := map[string]chain.Guard{}
	for _, n := range append(append([]string{}, chain.FirstPartyBefore...), chain.FirstPartyAfter...) {
		first[n] = pass(n)
	}
	first["ResponseContract"] = policied{"ResponseContract", "", failed}
	ch, err := chain.New(first, nil, &chain.Invoker{Caller: echo{}})
	if err != nil {
		t.Fatal(err)
	}
	res := ch.Run(context.Background(), chain.Call{Tool: "create_site", Args: []byte(`{}`)})
	if res.Observation.Code != abi.ToolBusinessFailed || res.Decider == nil || res.Decider.Guard != "ResponseContract" || res.Decider.Phase != abi.PhaseAfter {
		t.Fatalf("got %s decided by %+v", res.Observation.Code, res.Decider)
	}
	first["ResponseContract"] = pass("ResponseContract")
	if ch, err = chain.New(first, nil, &chain.Invoker{Caller: echo{}}); err != nil {
		t.Fatal(err)
	}
	if res := ch.Run(context.Background(), chain.Call{Tool: "create_site", Args: []byte(`{}`)}); res.Decider != nil {
		t.Fatalf("the tool's result stands, decided by %+v", res.Decider)
	}
}
