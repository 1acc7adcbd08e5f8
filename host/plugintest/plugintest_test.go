package plugintest_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/testdata"
)

func build(t *testing.T, pkg string) []byte {
	t.Helper()
	p, err := testdata.Build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hostOpts(t *testing.T) host.Options { return host.Options{CacheDir: testdata.CacheDir(t)} }

const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

func argcheckCases() []plugintest.Case {
	req := func(args string) abi.Request {
		return abi.Request{Phase: abi.PhaseBefore, Tool: "create_site", Args: json.RawMessage(args), Schema: json.RawMessage(nameSchema)}
	}
	return []plugintest.Case{
		{Name: "valid", Request: req(`{"name":"a"}`), Want: plugintest.WantPass()},
		{Name: "missing name", Request: req(`{}`), Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected)},
	}
}

// probeNames are the probes of one phase and tool of a guard.
var probeNames = []string{"empty-args", "args-not-object", "args-text", "unknown-tool", "no-contract-no-config",
	"deep-args", "wide-args", "unicode", "args-not-utf8", "near-input-limit"}

// guardChecks are the checks of a guard that runs before calls only, with
// the author's cases and the tools they name (the kit's READ and WRITE
// tools follow them).
func guardChecks(cases []string, tools ...string) []string {
	out := []string{"load", "manifest", "config"}
	for _, c := range cases {
		out = append(out, "case/"+c)
	}
	for _, tool := range append(tools, plugintest.ProbeReadTool, plugintest.ProbeWriteTool) {
		for _, p := range probeNames {
			out = append(out, "probe/before/"+tool+"/"+p)
		}
	}
	return append(out, "deterministic", "concurrent", "limits")
}

func names(rep plugintest.Report) []string {
	var out []string
	for _, c := range rep.Checks {
		out = append(out, c.Name)
	}
	return out
}

// TestRunArgcheck runs the kit the way an author would, on the argcheck
// example guard with two cases of its own.
func TestPluginRunArgcheck(t *testing.T) {
	t.Parallel()
	plugintest.Run(t, build(t, "./examples/guards/argcheck/cmd"), plugintest.Options{Name: "argcheck", Host: hostOpts(t), Cases: argcheckCases()})
}

// TestCheckArgcheck checks the report's shape and the probes' verdicts.
func TestPluginCheckArgcheck(t *testing.T) {
	t.Parallel()
	rep := plugintest.Check(context.Background(), build(t, "./examples/guards/argcheck/cmd"), plugintest.Options{Name: "argcheck", Host: hostOpts(t), Cases: argcheckCases()})
	if !rep.OK() || rep.Plugin != "argcheck@1.0.0" || rep.Loader != "direct" {
		t.Fatalf("report %s %s ok=%v:\n%s", rep.Plugin, rep.Loader, rep.OK(), rep)
	}
	if got, want := names(rep), guardChecks([]string{"valid", "missing name"}, "create_site"); !slices.Equal(got, want) {
		t.Fatalf("checks\n got %v\nwant %v", got, want)
	}
	want := map[string]string{
		"manifest":                              "guard argcheck 1.0.0 for phases [before]",
		"case/valid":                            "pass",
		"probe/before/create_site/unknown-tool": "pass",
		"probe/before/create_site/no-contract-no-config": "pass",
		"probe/before/create_site/unicode":               "pass",
		"probe/before/probe_read/empty-args":             "pass",
		"deterministic":                                  "32 request(s) sent again in reverse order gave the same verdicts",
		"concurrent":                                     "32 request(s) from 2 goroutines at once gave the sequential verdicts",
	}
	for name, detail := range want {
		if c, _ := rep.Result(name); c.Detail != detail {
			t.Errorf("%s: detail %q, want %q", name, c.Detail, detail)
		}
	}
	// Probes start from the first case, so they carry its schema.
	for _, name := range []string{"case/missing name", "probe/before/create_site/empty-args", "probe/before/create_site/args-not-object",
		"probe/before/create_site/args-text", "probe/before/create_site/deep-args", "probe/before/create_site/wide-args",
		"probe/before/create_site/args-not-utf8", "probe/before/create_site/near-input-limit"} {
		if c, _ := rep.Result(name); !strings.HasPrefix(c.Detail, "REJECTED ARG_REJECTED: ") {
			t.Errorf("%s: detail %q, want a rejection", name, c.Detail)
		}
	}
}

// TestRunExtismGood runs the kit on a guard built with the extism Go PDK.
func TestPluginRunExtismGood(t *testing.T) {
	t.Parallel()
	// The extism PDK reads its input through one host call per 8 bytes, so
	// the near-limit probe (1 MiB) takes hundreds of milliseconds, more
	// under -race on a loaded machine: the deadline is the operator's to set.
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: 10000}}
	plugintest.Run(t, testdata.Bytes(t, "extismgood"), plugintest.Options{Name: "extismgood", Host: hostOpts(t), Policy: pol, Cases: []plugintest.Case{
		{Name: "pass", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "t", Args: json.RawMessage(`{}`)}, Want: plugintest.WantPass()},
		{Name: "reject", Request: abi.Request{Phase: abi.PhaseAfter, Tool: "t", Args: json.RawMessage(`{"reject":true}`)},
			Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected)},
	}})
}

// TestRunBuiltin runs the kit on a builtin, with a config its schema accepts.
func TestPluginRunBuiltin(t *testing.T) {
	t.Parallel()
	plugintest.Run(t, build(t, "./host/plugintest/testdata/ptecho"), plugintest.Options{
		Name: "ptecho", Host: hostOpts(t), Policy: host.Policy{Config: json.RawMessage(`{"prefix":">"}`)},
		Cases: []plugintest.Case{{Name: "echo", Request: abi.Request{Tool: "echo", Args: json.RawMessage(`{"text":"hi"}`)},
			Want: plugintest.WantOutcome(abi.OutcomeSuccess, "")}},
	})
}

// TestCheckHostile runs the kit on the host's hostile fixtures: each must
// fail every probe with the exact detail, and loop and bigoutput also the
// limits check; the checks that do not depend on a call still hold.
func TestPluginCheckHostile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pol    host.Policy
		detail string
		limits string
	}{
		{name: "panichandler", detail: "plugin trapped (PLUGIN_TRAP): panic: boom"},
		{name: "noresult", detail: "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): the call ended without a result"},
		{name: "tworesults", detail: "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a second result in one call"},
		{name: "nonext", detail: "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result without a next step: ARG_REJECTED"},
		{name: "unknowncode", detail: "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result with an unregistered error code: NOT_A_CODE"},
		{name: "loop", pol: host.Policy{Limits: abi.Limits{TimeoutMs: 50}},
			detail: "plugin timed out (PLUGIN_TIMEOUT): no result within 50ms", limits: "of 80 calls, 80 call(s) hit the 50ms deadline"},
		{name: "bigoutput", detail: "output too large (PLUGIN_OUTPUT_TOO_LARGE): over the limit of 1048576 bytes",
			limits: "of 80 calls, 80 call(s) went over the 1048576-byte output limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := plugintest.Check(context.Background(), testdata.Bytes(t, tt.name), plugintest.Options{Name: tt.name, Policy: tt.pol, Host: hostOpts(t)})
			if rep.OK() {
				t.Fatalf("report OK, want failures:\n%s", rep)
			}
			if got, want := names(rep), guardChecks(nil); !slices.Equal(got, want) {
				t.Fatalf("checks\n got %v\nwant %v", got, want)
			}
			for _, c := range rep.Checks {
				var want string
				switch {
				case strings.HasPrefix(c.Name, "probe/"):
					want = tt.detail
				case c.Name == "limits" && tt.limits != "":
					want = tt.limits
				}
				if want == "" {
					if !c.OK {
						t.Errorf("%s failed: %s", c.Name, c.Detail)
					}
					continue
				}
				if c.OK || c.Detail != want {
					t.Errorf("%s: ok=%v detail %q\nwant failure %q", c.Name, c.OK, c.Detail, want)
				}
			}
		})
	}
}

// TestCheckStateful checks that a guard keeping state between calls fails
// the deterministic and concurrent checks.
func TestPluginCheckStateful(t *testing.T) {
	t.Parallel()
	rep := plugintest.Check(context.Background(), build(t, "./host/plugintest/testdata/ptstateful"), plugintest.Options{Name: "ptstateful", Host: hostOpts(t)})
	var failed []string
	for _, c := range rep.Failed() {
		failed = append(failed, c.Name)
	}
	if !slices.Equal(failed, []string{"deterministic", "concurrent"}) {
		t.Fatalf("failed checks %v, want [deterministic concurrent]:\n%s", failed, rep)
	}
	const want = "the same request gave another verdict: probe/before/probe_read/empty-args: first pass, then REJECTED ARG_REJECTED: 只放行第一次调用。下一步：换一个实例再调用"
	if c, _ := rep.Result("deterministic"); !strings.HasPrefix(c.Detail, want) {
		t.Errorf("deterministic: %q\nwant prefix %q", c.Detail, want)
	}
}

// TestCheckCases checks how the kit reports cases that do not get what they
// want, and cases that cannot be sent as written.
func TestPluginCheckCases(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(nameSchema)
	rep := plugintest.Check(context.Background(), build(t, "./examples/guards/argcheck/cmd"), plugintest.Options{Name: "argcheck", Host: hostOpts(t), Cases: []plugintest.Case{
		{Name: "wrong want", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "t", Args: json.RawMessage(`{}`), Schema: schema}, Want: plugintest.WantPass()},
		{Name: "wrong code", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "t", Args: json.RawMessage(`{}`), Schema: schema},
			Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.CatalogDenied)},
		{Name: "after", Request: abi.Request{Phase: abi.PhaseAfter, Tool: "t"}, Want: plugintest.WantPass()},
		{Name: "both", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "t"}, Want: plugintest.Want{Pass: true, Outcome: abi.OutcomeRejected}},
	}})
	reject := "REJECTED ARG_REJECTED: 参数不符合工具 t 的定义：name: required property is missing。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	want := map[string]string{
		"case/wrong want": "got " + reject + ", want pass",
		"case/wrong code": "got " + reject + ", want REJECTED CATALOG_DENIED",
		"case/after":      `phase "after" is not one the manifest declares [before]`,
		"case/both":       "the case wants both a pass and REJECTED",
	}
	for name, detail := range want {
		c, ok := rep.Result(name)
		if !ok || c.OK || c.Detail != detail {
			t.Errorf("%s: ok=%v detail %q\nwant failure %q", name, c.OK, c.Detail, detail)
		}
	}
	if n := len(rep.Failed()); n != len(want) {
		t.Errorf("%d failed checks, want %d:\n%s", n, len(want), rep)
	}
}

// TestCheckLoadFailure checks that a module that does not load is reported
// by the load check alone.
func TestPluginCheckLoadFailure(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, wat, detail string }{
		{"notaplugin", "notaplugin", "host: load notaplugin: host: export warden_"},
		{"wrongabi", "wrongabi", "host: load wrongabi: unsupported ABI version: plugin speaks ABI 99, host speaks 1"},
	}
	for _, tt := range tests {
		rep := plugintest.Check(context.Background(), testdata.WAT(t, tt.wat), plugintest.Options{Name: tt.name})
		if len(rep.Checks) != 1 || rep.Checks[0].Name != "load" || rep.Checks[0].OK || !strings.HasPrefix(rep.Checks[0].Detail, tt.detail) {
			t.Errorf("%s: %+v, want one failed load check with %q", tt.name, rep.Checks, tt.detail)
		}
		if rep.OK() || rep.Plugin != tt.name {
			t.Errorf("%s: OK %v, Plugin %q", tt.name, rep.OK(), rep.Plugin)
		}
	}
}

// TestPluginCheckBuiltinCases: a builtin's case that names a phase or a
// tool the builtin does not provide cannot be sent as written.
func TestPluginCheckBuiltinCases(t *testing.T) {
	t.Parallel()
	rep := plugintest.Check(context.Background(), build(t, "./host/plugintest/testdata/ptecho"), plugintest.Options{
		Name: "ptecho", Host: hostOpts(t), Policy: host.Policy{Config: json.RawMessage(`{"prefix":">"}`)},
		Cases: []plugintest.Case{
			{Name: "phase", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "echo", Args: json.RawMessage(`{"text":"hi"}`)}},
			{Name: "tool", Request: abi.Request{Tool: "shout", Args: json.RawMessage(`{}`)}},
		}})
	want := map[string]string{
		"case/phase": `phase "before": a builtin has no phases`,
		"case/tool":  `tool "shout" is not one the manifest provides`,
	}
	got := map[string]string{}
	for _, c := range rep.Failed() {
		got[c.Name] = c.Detail
	}
	if len(got) != len(want) {
		t.Fatalf("failed %v, want %v", got, want)
	}
	for name, detail := range want {
		if got[name] != detail {
			t.Errorf("%s: %q, want %q", name, got[name], detail)
		}
	}
}

// TestPluginCheckDeclaredCodes: a case may want a code the plugin declares,
// by its full name or its own; a code neither registered nor declared, or
// another plugin's, cannot be sent as written.
func TestPluginCheckDeclaredCodes(t *testing.T) {
	t.Parallel()
	req := abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"evil.org"}`)}
	rep := plugintest.Check(context.Background(), testdata.Bytes(t, "declaredcode"), plugintest.Options{Name: "declaredcode", Host: hostOpts(t),
		Cases: []plugintest.Case{
			{Name: "full name", Request: req, Want: plugintest.WantOutcome(abi.OutcomeRejected, "domainguard:DOMAIN_BLOCKED")},
			{Name: "own name", Request: req, Want: plugintest.WantOutcome(abi.OutcomeRejected, "DOMAIN_BLOCKED")},
			{Name: "undeclared", Request: req, Want: plugintest.WantOutcome(abi.OutcomeRejected, "DOMAIN_DENIED")},
			{Name: "another plugin's", Request: req, Want: plugintest.WantOutcome(abi.OutcomeRejected, "otherguard:DOMAIN_BLOCKED")},
			{Name: "a registered code", Request: req, Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected)},
		}})
	want := map[string]struct {
		ok     bool
		detail string
	}{
		"case/full name":         {true, "REJECTED domainguard:DOMAIN_BLOCKED: 域名 evil.org 不在允许的范围内。下一步：换用 example.com 下的域名"},
		"case/own name":          {true, "REJECTED domainguard:DOMAIN_BLOCKED: 域名 evil.org 不在允许的范围内。下一步：换用 example.com 下的域名"},
		"case/undeclared":        {false, "code DOMAIN_DENIED is not registered, nor one the manifest declares (DOMAIN_BLOCKED)"},
		"case/another plugin's":  {false, "code otherguard:DOMAIN_BLOCKED is plugin otherguard's, not domainguard's"},
		"case/a registered code": {false, "got REJECTED domainguard:DOMAIN_BLOCKED: 域名 evil.org 不在允许的范围内。下一步：换用 example.com 下的域名, want REJECTED ARG_REJECTED"},
	}
	for name, w := range want {
		c, ok := rep.Result(name)
		if !ok || c.OK != w.ok || c.Detail != w.detail {
			t.Errorf("%s: ok=%v %q\nwant ok=%v %q", name, c.OK, c.Detail, w.ok, w.detail)
		}
	}
}

// TestCheckConfig checks a config its schema refuses, and a manifest
// problem Load lets through (a tool without a description).
func TestPluginCheckConfig(t *testing.T) {
	t.Parallel()
	rep := plugintest.Check(context.Background(), build(t, "./host/plugintest/testdata/ptecho"), plugintest.Options{
		Name: "ptecho", Host: hostOpts(t), Policy: host.Policy{Config: json.RawMessage(`{"prefix":1}`)}})
	// The host may refuse the config at load, or the kit's own check does.
	if c, _ := rep.Result("load"); !c.OK {
		if !strings.Contains(c.Detail, host.ErrConfig.Error()) {
			t.Fatalf("load: %s", c.Detail)
		}
		return
	}
	c, _ := rep.Result("config")
	if c.OK || !strings.HasPrefix(c.Detail, "config does not match configSchema: ") || !strings.Contains(c.Detail, "prefix") {
		t.Fatalf("config: ok=%v %q", c.OK, c.Detail)
	}
}

// TestPluginCheckEdges runs the kit on fixtures that work on a simple call
// and fail only on a request at the edges: the probe that shows it fails
// with the exact detail, every other check holds.
func TestPluginCheckEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		failed map[string]string
	}{
		{"deepnest", map[string]string{
			"probe/before/probe_read/deep-args":  "plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64",
			"probe/before/probe_write/deep-args": "plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64"}},
		{"asciionly", map[string]string{
			"probe/before/probe_read/unicode":  "plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [240] with length 128",
			"probe/before/probe_write/unicode": "plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [240] with length 128"}},
		{"afterbuffer", map[string]string{
			"probe/after/probe_read/big-result":  "plugin trapped (PLUGIN_TRAP): panic: afterbuffer: the result data does not fit the 64 KiB buffer",
			"probe/after/probe_write/big-result": "plugin trapped (PLUGIN_TRAP): panic: afterbuffer: the result data does not fit the 64 KiB buffer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := plugintest.Check(context.Background(), testdata.Bytes(t, tt.name), plugintest.Options{Name: tt.name, Host: hostOpts(t)})
			got := map[string]string{}
			for _, c := range rep.Failed() {
				got[c.Name] = c.Detail
			}
			if len(got) != len(tt.failed) {
				t.Fatalf("failed checks %v, want %v:\n%s", got, tt.failed, rep)
			}
			for name, detail := range tt.failed {
				if got[name] != detail {
					t.Errorf("%s: %q\nwant %q", name, got[name], detail)
				}
			}
		})
	}
}

// TestPluginCheckReservedCode: a plugin answering with a code only the host
// may report fails every probe as a contract violation.
func TestPluginCheckReservedCode(t *testing.T) {
	t.Parallel()
	rep := plugintest.Check(context.Background(), testdata.Bytes(t, "reservedcode"), plugintest.Options{Name: "reservedcode", Host: hostOpts(t)})
	const want = "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result with an error code only the host may report: GUARD_UNAVAILABLE"
	n := 0
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "probe/") {
			n++
			if c.OK || c.Detail != want {
				t.Errorf("%s: ok=%v %q\nwant %q", c.Name, c.OK, c.Detail, want)
			}
		}
	}
	if n != 20 {
		t.Errorf("%d probes, want 20", n)
	}
}

// TestPluginCheckHostileWrites runs the kit on guards that behave on every
// call but the ones that matter: a write's contract, or the tool their
// author wrote them for. Each failure is caught by the probes of that tool
// and phase, named in the check, with the exact detail; every other check
// holds.
func TestPluginCheckHostileWrites(t *testing.T) {
	t.Parallel()
	website := []plugintest.Case{
		{Name: "allowed", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"spring.example.com"}`)},
			Want: plugintest.WantPass()},
		{Name: "evil", Request: abi.Request{Phase: abi.PhaseBefore, Tool: "create_website", Args: json.RawMessage(`{"domain":"evil.org"}`)},
			Want: plugintest.WantOutcome(abi.OutcomeRejected, abi.ArgRejected)},
	}
	// all but the probes that drop the contract (unknown-tool,
	// no-contract-no-config).
	writes := func(target, detail string) map[string]string {
		out := map[string]string{}
		for _, p := range probeNames {
			if p != "unknown-tool" && p != "no-contract-no-config" {
				out["probe/"+target+"/"+p] = detail
			}
		}
		return out
	}
	with := func(m map[string]string, k, v string) map[string]string { m[k] = v; return m }
	const viol = "plugin contract violation (PLUGIN_CONTRACT_VIOLATION): "
	tests := []struct {
		name   string
		pol    host.Policy
		cases  []plugintest.Case
		failed map[string]string
	}{
		{name: "writepanic", failed: writes("before/probe_write", "plugin trapped (PLUGIN_TRAP): panic: writepanic: no rule for writes")},
		{name: "writenonext", failed: writes("before/probe_write", viol+"a non-success result without a next step: ARG_REJECTED")},
		{name: "writeunknowncode", failed: writes("before/probe_write", viol+"a non-success result with an unregistered error code: DOMAIN_BLOCKED")},
		// A deadline long enough that a call that passes never meets it on
		// a loaded machine.
		{name: "writeloop", pol: host.Policy{Limits: abi.Limits{TimeoutMs: 300}},
			failed: with(with(writes("after/probe_write", "plugin timed out (PLUGIN_TIMEOUT): no result within 300ms"),
				"probe/after/probe_write/big-result", "plugin timed out (PLUGIN_TIMEOUT): no result within 300ms"),
				"limits", "of 168 calls, 36 call(s) hit the 300ms deadline")},
		{name: "toolpanic", cases: website, failed: writes("before/create_website", "plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [-1]")},
		// Without a case naming create_website, nothing calls it.
		{name: "toolpanic", failed: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := plugintest.Check(context.Background(), testdata.Bytes(t, tt.name), plugintest.Options{Name: tt.name, Policy: tt.pol, Host: hostOpts(t), Cases: tt.cases})
			got := map[string]string{}
			for _, c := range rep.Failed() {
				got[c.Name] = c.Detail
			}
			for name, detail := range tt.failed {
				if got[name] != detail {
					t.Errorf("%s: %q\nwant %q", name, got[name], detail)
				}
			}
			for name, detail := range got {
				if _, ok := tt.failed[name]; !ok {
					t.Errorf("%s failed too: %s", name, detail)
				}
			}
			if rep.OK() != (len(tt.failed) == 0) {
				t.Errorf("OK() = %v with %d failures", rep.OK(), len(tt.failed))
			}
		})
	}
}
