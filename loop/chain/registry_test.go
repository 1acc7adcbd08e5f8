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
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/loop/chain"
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
}

// pass is a first-party stand-in that passes.
type pass string

func (p pass) Name() string { return string(p) }
func (p pass) Guard(context.Context, string, *abi.Request) abi.Verdict {
	return abi.Verdict{Pass: true}
}
