package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestTenantGuards attaches a tenant's own guard to a skill through its
// contract's guards, places it in the chain, and checks that another tenant
// cannot reach it.
func TestTenantGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	path, err := testdata.Build("./examples/guards/spendlimit/cmd")
	if err != nil {
		t.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	reg := &chain.Registry{Host: h}
	defer reg.Close(ctx)
	m, err := reg.Install(ctx, "acme", src)
	if err != nil || m.Name != "spendlimit" {
		t.Fatalf("install: %v %+v", err, m)
	}
	c, _, err := contract.Parse("payments", []byte(`{"tools":{"create_payment":{}},"guards":[{"ref":"spendlimit@1.0.0","phase":"before","position":"after:ArgBinding",
		"config":{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"CNY":5000}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	placements, err := reg.Placements(ctx, "acme", c.Guards)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]chain.Guard{}
	for _, n := range append(append([]string{}, chain.FirstPartyBefore...), chain.FirstPartyAfter...) {
		first[n] = pass(n)
	}
	ch, err := chain.New(first, placements, &chain.Invoker{Caller: echo{}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range ch.Before {
		names = append(names, g.Name())
	}
	if got := strings.Join(names, " "); got != "ArgPolicy ArgBinding spendlimit@1.0.0 ParamContract Fingerprint WriteGate" {
		t.Fatalf("before chain: %s", got)
	}
	res := ch.Run(ctx, chain.Call{Tenant: "acme", Tool: "create_payment", Args: []byte(`{"amount":9000,"currency":"CNY"}`)})
	if res.Invoked || res.Observation.Code != abi.ArgRejected || res.Observation.Outcome != abi.OutcomeRejected {
		t.Fatalf("over the limit: %+v", res.Observation)
	}
	res = ch.Run(ctx, chain.Call{Tenant: "acme", Tool: "create_payment", Args: []byte(`{"amount":900,"currency":"CNY"}`)})
	if !res.Invoked || res.Observation.Outcome != abi.OutcomeSuccess {
		t.Fatalf("under the limit: %+v", res.Observation)
	}
	if _, err := reg.Placements(ctx, "globex", c.Guards); !errors.Is(err, chain.ErrUnknownGuard) {
		t.Fatalf("another tenant reached acme's guard: %v", err)
	}
	bad := []contract.Guard{{Ref: "spendlimit@1.0.0", Phase: contract.PhaseBefore, Config: json.RawMessage(`{"tool":"x"}`)}}
	if _, err := reg.Placements(ctx, "acme", bad); !errors.Is(err, host.ErrConfig) {
		t.Fatalf("a config against the guard's schema: %v", err)
	}

	// Attach reports every guard that keeps the skill from loading.
	if ps, problems := reg.Attach(ctx, "acme", "payments", c.Guards); len(problems) > 0 || len(ps) != 1 {
		t.Fatalf("attach: %v", problems)
	}
	cfg := json.RawMessage(`{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"CNY":5000}}`)
	tests := []struct {
		name   string
		tenant string
		guard  contract.Guard
		want   string
	}{
		{"another tenant", "globex", contract.Guard{Ref: "spendlimit@1.0.0", Phase: contract.PhaseBefore, Config: cfg},
			`contract: skill "payments": guards[0].ref: rule W1: invalid guard ref: spendlimit@1.0.0 is not installed for tenant globex`},
		{"another version", "acme", contract.Guard{Ref: "spendlimit@1.0.1", Phase: contract.PhaseBefore, Config: cfg},
			`contract: skill "payments": guards[0].ref: rule W1: invalid guard ref: spendlimit@1.0.1 is not installed for tenant acme`},
		{"the wrong phase", "acme", contract.Guard{Ref: "sha256:" + host.Digest(src.Bytes), Phase: contract.PhaseAfter, Config: cfg},
			`contract: skill "payments": guards[0].ref: rule W1: invalid guard ref: sha256:` + host.Digest(src.Bytes) + ` (spendlimit@1.0.0) runs in phases [before], not after`},
		{"a config the schema refuses", "acme", contract.Guard{Ref: "spendlimit@1.0.0", Phase: contract.PhaseBefore},
			`contract: skill "payments": guards[0].config: rule W5: guard config is not an object: spendlimit@1.0.0's configSchema refuses it: tool: required property is missing; amountPath: required property is missing; currencyPath: required property is missing; limits: required property is missing`},
	}
	for _, tt := range tests {
		ps, problems := reg.Attach(ctx, tt.tenant, "payments", []contract.Guard{tt.guard})
		if ps != nil || len(problems) != 1 || problems[0].Error() != tt.want {
			t.Errorf("%s: got %v %v\nwant %s", tt.name, ps, problems, tt.want)
		}
	}
	if !reg.Remove(ctx, "acme", "spendlimit@1.0.0") || reg.Remove(ctx, "acme", "spendlimit@1.0.0") {
		t.Fatal("remove")
	}
	if problems := reg.Check("acme", "payments", c.Guards); len(problems) != 1 {
		t.Fatalf("a removed guard resolves: %v", problems)
	}
}

// TestTenantGuardGrants checks that a tenant guard gets no capability its
// installer did not grant: a manifest asking for more is refused.
func TestTenantGuardGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	src := host.Source{Name: "slowinstance.wasm", Bytes: testdata.Bytes(t, "slowinstance")}
	reg := &chain.Registry{Host: h}
	defer reg.Close(ctx)
	_, err = reg.Install(ctx, "acme", src)
	if !errors.Is(err, host.ErrNotGranted) || !strings.Contains(err.Error(), "chain: install for tenant acme: host: load slowinstance.wasm: plugin asks for capabilities it is not granted: slowinstance@1.0.0 asks for clock; it may have none (not granted: clock)") {
		t.Fatalf("ungranted: %v", err)
	}
	if _, _, ok := reg.Resolve("acme", "slowinstance@1.0.0"); ok {
		t.Fatal("a refused module resolves")
	}
	if _, err := reg.Install(ctx, "acme", src, abi.CapClock); err != nil {
		t.Fatal(err)
	}
	if m, _, ok := reg.Resolve("acme", "slowinstance@1.0.0"); !ok || m.Name != "slowinstance" {
		t.Fatal("granted module does not resolve")
	}
}

// pass is a first-party stand-in that passes.
type pass string

func (p pass) Name() string { return string(p) }
func (p pass) Guard(context.Context, string, *abi.Request) abi.Verdict {
	return abi.Verdict{Pass: true}
}
