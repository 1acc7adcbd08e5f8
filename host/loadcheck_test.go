package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestLoadCheckRefuses: a slot refuses a candidate that fails on what a
// tenant could send, with the probe and the exact reason, and the failure's
// kind; one fixture per failure mode, each caught by the probe that shows it.
func TestLoadCheckRefuses(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	tests := []struct {
		name   string
		pkg    string // when not a guests/ fixture
		pol    host.Policy
		kind   error
		reason string
	}{
		{name: "panichandler", kind: host.ErrTrap, reason: "before/empty-args: plugin trapped (PLUGIN_TRAP): panic: boom"},
		{name: "noresult", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): the call ended without a result"},
		{name: "tworesults", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a second result in one call"},
		{name: "nonext", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result without a next step: ARG_REJECTED"},
		{name: "unknowncode", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result with an unregistered error code: NOT_A_CODE"},
		{name: "reservedcode", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result with an error code only the host may report: GUARD_UNAVAILABLE"},
		{name: "ungranted", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): an effect the plugin was not granted: ledger.reserve"},
		{name: "loop", pol: fast, kind: host.ErrTimeout, reason: "before/empty-args: plugin timed out (PLUGIN_TIMEOUT): no result within 200ms"},
		{name: "bigoutput", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_OUTPUT_TOO_LARGE): over the output limit of 1048576 bytes"},
		{name: "membomb", pol: fast, kind: host.ErrMemoryLimit, reason: "before/empty-args: plugin memory limit (PLUGIN_MEMORY_LIMIT): 512 pages"},
		{name: "deepnest", kind: host.ErrTrap, reason: "before/deep-args: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64"},
		{name: "asciionly", kind: host.ErrTrap, reason: "before/unicode: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [240] with length 128"},
		{name: "afterbuffer", kind: host.ErrTrap, reason: "after/big-result: plugin trapped (PLUGIN_TRAP): panic: afterbuffer: the result data does not fit the 64 KiB buffer"},
		{name: "ptstateful", pkg: "./host/plugintest/testdata/ptstateful", kind: host.ErrLoadCheck,
			reason: "before/empty-args: the same request answered pass, then REJECTED ARG_REJECTED"},
		{name: "extismpanic", kind: host.ErrTrap, reason: "before/empty-args: plugin trapped (PLUGIN_TRAP): panic: boom"},
		{name: "extismnoresult", kind: host.ErrViolation, reason: "before/empty-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): the call ended without a result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg := tt.pkg
			if pkg == "" {
				pkg = "./internal/testdata/guests/" + tt.name
			}
			path, err := testdata.Build(pkg)
			if err != nil {
				t.Fatal(err)
			}
			bin, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.NewSlot(context.Background(), "S", host.Source{Name: tt.name, Bytes: bin}, tt.pol, func(context.Context, *host.Plugin) error {
				t.Error("the self-test ran after a failed load check")
				return nil
			})
			want := "host: slot S: candidate: host: " + tt.name + "@1.0.0: plugin failed the load check: " + tt.reason
			if err == nil || err.Error() != want {
				t.Fatalf("NewSlot: %v\nwant %s", err, want)
			}
			if !errors.Is(err, host.ErrLoadCheck) || !errors.Is(err, tt.kind) {
				t.Fatalf("error %v does not wrap ErrLoadCheck and %v", err, tt.kind)
			}
		})
	}
}

// TestLoadCheckKeepsServing: a candidate that fails the load check leaves
// the serving generation in place; here a new version of the same guard
// that hangs on the near-limit request.
func TestLoadCheckKeepsServing(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	ctx := context.Background()
	src := host.Source{Name: "good", Bytes: testdata.Bytes(t, "good")}
	slot, err := h.NewSlot(ctx, "Good", src, host.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	hang := host.Source{Name: "goodhang", Bytes: testdata.Bytes(t, "goodhang")}
	_, err = slot.Swap(ctx, hang, fast, nil)
	if !errors.Is(err, host.ErrLoadCheck) || !errors.Is(err, host.ErrTimeout) {
		t.Fatalf("swap to a version that hangs on a large request: %v", err)
	}
	if got := slot.Current(); got.Number != 1 || got.Ref != "good@1.0.0" {
		t.Fatalf("serving %+v, want generation 1 of good", got)
	}
	if v := slot.Guard(ctx, "acme", before(`{}`)); !v.Pass {
		t.Fatalf("after the refused swap: %+v", v)
	}
}

// TestLoadCheckFirstParty: every first-party plugin and example passes the
// load check under the default policy.
func TestLoadCheckFirstParty(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	for _, tt := range []struct {
		pkg    string
		config string
	}{
		{pkg: "./plugins/builtins/control/cmd"},
		{pkg: "./plugins/builtins/env/cmd"},
		{pkg: "./plugins/builtins/node/cmd"},
		{pkg: "./plugins/guards/argbinding/cmd"},
		{pkg: "./plugins/guards/argpolicy/cmd"},
		{pkg: "./plugins/guards/evidence/cmd"},
		{pkg: "./plugins/guards/fingerprint/cmd"},
		{pkg: "./plugins/guards/paramcontract/cmd"},
		{pkg: "./plugins/guards/responsecontract/cmd"},
		{pkg: "./plugins/guards/writegate/cmd"},
		{pkg: "./examples/builtins/unitconv/cmd"},
		{pkg: "./examples/guards/argcheck/cmd"},
		{pkg: "./examples/guards/noop/cmd"},
		{pkg: "./examples/guards/spendlimit/cmd", config: `{"tool":"create_payment","amountPath":"amount","currencyPath":"currency","limits":{"USD":800}}`},
		{pkg: "./internal/testdata/guests/good"},
		{pkg: "./internal/testdata/guests/openfile"},
	} {
		// One at a time: each sends megabytes under a 1 s deadline.
		t.Run(strings.TrimSuffix(strings.TrimPrefix(tt.pkg, "./"), "/cmd"), func(t *testing.T) {
			path, err := testdata.Build(tt.pkg)
			if err != nil {
				t.Fatal(err)
			}
			bin, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pol := host.Policy{Capabilities: firstPartyGrant[tt.pkg]}
			if tt.config != "" {
				pol.Config = json.RawMessage(tt.config)
			}
			p, err := h.Load(context.Background(), host.Source{Name: path, Bytes: bin}, pol)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			if err := p.LoadCheck(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProbes checks the probes themselves: each is a valid envelope within
// the input limit, the near-limit one exactly at it, and they carry what
// their names promise.
func TestProbes(t *testing.T) {
	t.Parallel()
	res := abi.Success("ok", json.RawMessage(`{}`))
	base := abi.Request{ABI: 1, Kind: abi.RoleGuard, Phase: abi.PhaseAfter, Tool: "t", Args: json.RawMessage(`{}`), Result: &res, Response: json.RawMessage(`{}`)}
	const limit = 1 << 20
	probes := host.Probes(base, limit)
	var names []string
	for _, p := range probes {
		names = append(names, p.Name)
		if p.Bad != "" {
			t.Errorf("%s: %s", p.Name, p.Bad)
			continue
		}
		if !json.Valid(p.Raw) || len(p.Raw) > limit {
			t.Errorf("%s: %d bytes, valid %v", p.Name, len(p.Raw), json.Valid(p.Raw))
		}
		if err := abi.CheckDuplicateKeys(p.Raw); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		var back abi.Request
		if err := json.Unmarshal(p.Raw, &back); err != nil || back.Phase != abi.PhaseAfter || back.ABI != 1 {
			t.Errorf("%s: decodes as %+v, %v", p.Name, back, err)
		}
		switch p.Name {
		case host.ProbeNearMaxInput:
			if len(p.Raw) != limit {
				t.Errorf("near-input-limit is %d bytes, want %d", len(p.Raw), limit)
			}
		case host.ProbeDeepArgs:
			if n := strings.Count(string(back.Args), "["); n != 500 {
				t.Errorf("deep-args nests %d arrays, want 500", n)
			}
		case host.ProbeNotUTF8:
			if !utf8.ValidString(back.ArgsText) || !strings.Contains(back.ArgsText, "\ufffd") || back.Args != nil {
				t.Errorf("args-not-utf8 reads back as %q, args %s", back.ArgsText, back.Args)
			}
		case host.ProbeBigResult:
			if back.Result == nil || len(back.Result.Data) < limit/3 || len(back.Response) < limit/3 {
				t.Errorf("big-result: data %d bytes, response %d", len(back.Result.Data), len(back.Response))
			}
		}
	}
	want := "empty-args args-not-object args-text unknown-tool deep-args wide-args unicode args-not-utf8 near-input-limit big-result"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("probes %s\nwant %s", got, want)
	}
	before := base
	before.Phase, before.Result, before.Response = abi.PhaseBefore, nil, nil
	if n := len(host.Probes(before, limit)); n != 9 {
		t.Errorf("%d before-phase probes, want 9 (no big-result)", n)
	}
	big := base
	big.Config = json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	for _, p := range host.Probes(big, 1000) {
		if p.Raw != nil || p.Bad == "" {
			t.Errorf("%s: over-limit base gave a %d-byte probe, bad %q", p.Name, len(p.Raw), p.Bad)
		}
	}
}
