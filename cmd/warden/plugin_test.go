package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/testdata"
)

func runPlugin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdPlugin(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func argcheckWasm(t *testing.T) string {
	t.Helper()
	p, err := testdata.Build("./examples/guards/argcheck/cmd")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func digestOf(t *testing.T, path string) (string, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return host.Digest(b), len(b)
}

// missingLines reports the lines of want missing from out.
func missingLines(out string, want ...string) []string {
	lines := strings.Split(out, "\n")
	var missing []string
	for _, w := range want {
		if !slices.Contains(lines, w) {
			missing = append(missing, w)
		}
	}
	return missing
}

func TestPluginInspect(t *testing.T) {
	t.Parallel()
	path := argcheckWasm(t)
	sum, size := digestOf(t, path)
	code, out, stderr := runPlugin(t, "inspect", path)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if m := missingLines(out,
		"file          "+path,
		"abi           1",
		"loader        direct",
		"name          argcheck",
		"version       1.0.0",
		"role          guard",
		"phases        before",
		"capabilities  none",
		"limits        timeout 1000ms, memory 1024 pages, input 1048576 bytes, output 1048576 bytes",
		"exports       _initialize, warden_abi_version, warden_handle, warden_input, warden_lean_input, warden_manifest, warden_select",
		"size          "+strconv.Itoa(size)+" bytes",
		"sha256        "+sum,
	); len(m) > 0 {
		t.Fatalf("missing lines %q in\n%s", m, out)
	}
	if !strings.Contains(out, "\nimports       warden.deferred, warden.failed, warden.pass, warden.query, warden.rejected, warden.validate, wasi_snapshot_preview1.") {
		t.Errorf("imports line:\n%s", out)
	}

	code, out, stderr = runPlugin(t, "inspect", "--json", path)
	var info host.Info
	if code != 0 || stderr != "" || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("--json: exit %d, stderr %q, out %s", code, stderr, out)
	}
	if info.SHA256 != sum || info.Size != size || info.Loader != "direct" || info.ABIVersion != 1 || info.Manifest.Name != "argcheck" || info.Limits != host.DefaultLimits {
		t.Errorf("--json: %+v", info)
	}

	code, out, stderr = runPlugin(t, "inspect", filepath.Join(testdata.Root(), "internal", "testdata", "wat", "wrongabi.wasm"))
	if code != 1 || out != "" || !strings.HasSuffix(stderr, "unsupported ABI version: plugin speaks ABI 99, host speaks 1\n") {
		t.Errorf("wrongabi: exit %d, out %q, stderr %q", code, out, stderr)
	}
}

func TestPluginTest(t *testing.T) {
	t.Parallel()
	path := argcheckWasm(t)
	sum, _ := digestOf(t, path)
	code, out, stderr := runPlugin(t, "test", path)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out)
	}
	if m := missingLines(out,
		"plugin argcheck@1.0.0 (direct, sha256 "+sum+")",
		"✓ load: argcheck@1.0.0 via the direct loader, ABI 1, sha256 "+sum,
		"✓ manifest: guard argcheck 1.0.0 for phases [before]",
		"✓ probe/before/probe_read/empty-args: pass",
		"✓ probe/before/probe_read/wide-args: pass",
		"✓ probe/before/probe_write/unicode: pass",
		"✓ deterministic: 20 request(s) sent again in reverse order gave the same verdicts",
		"26 of 26 checks passed",
	); len(m) > 0 {
		t.Fatalf("missing lines %q in\n%s", m, out)
	}

	code, out, _ = runPlugin(t, "test", testdata.Wasm(t, "panichandler"))
	if code != 1 {
		t.Fatalf("panichandler: exit %d\n%s", code, out)
	}
	if m := missingLines(out,
		"✗ probe/before/probe_read/empty-args: plugin trapped (PLUGIN_TRAP): panic: boom",
		"✗ probe/before/probe_write/near-input-limit: plugin trapped (PLUGIN_TRAP): panic: boom",
		"6 of 26 checks passed",
	); len(m) > 0 {
		t.Fatalf("panichandler: missing lines %q in\n%s", m, out)
	}

	code, out, _ = runPlugin(t, "test", "--json", "--timeout-ms", "50", testdata.Wasm(t, "loop"))
	var rep struct {
		plugintest.Report
		OK bool `json:"ok"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.OK {
		t.Fatalf("loop --json: exit %d\n%s", code, out)
	}
	if c, _ := rep.Result("limits"); c.OK || c.Detail != "of 80 calls, 80 call(s) hit the 50ms deadline" {
		t.Errorf("loop limits: %+v", c)
	}
}

// TestPluginTestEdges: a guard that works on a simple call but traps on
// deeply nested arguments fails exactly the probe that shows it.
func TestPluginTestEdges(t *testing.T) {
	t.Parallel()
	code, out, _ := runPlugin(t, "test", testdata.Wasm(t, "deepnest"))
	if code != 1 {
		t.Fatalf("deepnest: exit %d\n%s", code, out)
	}
	if m := missingLines(out,
		"✓ probe/before/probe_read/empty-args: pass",
		"✗ probe/before/probe_read/deep-args: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64",
		"✗ probe/before/probe_write/deep-args: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64",
		"✓ probe/before/probe_write/near-input-limit: pass",
		"24 of 26 checks passed",
	); len(m) > 0 {
		t.Fatalf("deepnest: missing lines %q in\n%s", m, out)
	}
}

// TestPluginTestCases: guards that pass every call but the ones that
// matter fail `warden plugin test`, naming the tool, phase and probe, and
// an author's case that does not get its verdict fails naming the case.
func TestPluginTestCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	website := write("website.yaml", `cases:
  - name: allowed
    tool: create_website
    args: {domain: spring.example.com}
    want: pass
  - name: evil
    tool: create_website
    args: {domain: evil.org}
    want: REJECTED ARG_REJECTED
`)
	wrong := write("wrong.yaml", `cases:
  - name: evil
    tool: create_website
    args: {domain: evil.org}
    want: pass
`)
	tests := []struct {
		name, fixture, cases string
		lines                []string
	}{
		{"trap on writes", "writepanic", "", []string{
			"✓ probe/before/probe_read/empty-args: pass",
			"✗ probe/before/probe_write/empty-args: plugin trapped (PLUGIN_TRAP): panic: writepanic: no rule for writes",
			"18 of 26 checks passed"}},
		{"no next step on writes", "writenonext", "", []string{
			"✗ probe/before/probe_write/unicode: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result without a next step: ARG_REJECTED",
			"18 of 26 checks passed"}},
		{"unregistered code on writes", "writeunknowncode", "", []string{
			"✗ probe/before/probe_write/deep-args: plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result with an unregistered error code: DOMAIN_BLOCKED",
			"18 of 26 checks passed"}},
		{"trap on the cases' tool", "toolpanic", website, []string{
			"✓ case/allowed: pass",
			"✓ case/evil: REJECTED ARG_REJECTED: evil.org is blocked。下一步：ask the user for another domain",
			"✗ probe/before/create_website/empty-args: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [-1]",
			"✓ probe/before/create_website/no-contract-no-config: pass",
			"30 of 38 checks passed"}},
		{"a case that does not get its verdict", "toolpanic", wrong, []string{
			"✗ case/evil: got REJECTED ARG_REJECTED: evil.org is blocked。下一步：ask the user for another domain, want pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"test", testdata.Wasm(t, tt.fixture)}
			if tt.cases != "" {
				args = append(args, "--cases", tt.cases)
			}
			code, out, stderr := runPlugin(t, args...)
			if code != 1 || stderr != "" {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out)
			}
			if m := missingLines(out, tt.lines...); len(m) > 0 {
				t.Fatalf("missing lines %q in\n%s", m, out)
			}
		})
	}

	// A cases file that cannot be read is an error of its own.
	bad := write("bad.yaml", "cases:\n- {name: a, tool: t, want: REJECTED nope}\n")
	code, out, stderr := runPlugin(t, "test", "--cases", bad, testdata.Wasm(t, "good"))
	if want := "warden plugin test: plugintest: " + bad + ": invalid cases file: case a: want \"REJECTED nope\": \"nope\" is neither a registered code nor a code name a plugin may declare\n"; code != 1 || out != "" || stderr != want {
		t.Errorf("bad cases: exit %d, out %q, stderr %q\nwant %q", code, out, stderr, want)
	}
	// A module built as a command is refused with the build to use.
	path := filepath.Join(dir, "command.wasm")
	if err := os.WriteFile(path, testdata.Command(t, "command"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runPlugin(t, "test", path)
	if m := missingLines(out, "✗ load: host: load "+path+": host: it exports _start and not _initialize: module is built as a command, not a reactor; "+
		"build it with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm ./cmd` (or `warden plugin build DIR`)"); code != 1 || len(m) > 0 {
		t.Errorf("command: exit %d, missing %q in\n%s", code, m, out)
	}
}

// TestPluginTestFirstParty: every first-party plugin passes `warden plugin
// test` as built, under the default policy but for the deadline: the kit
// sends a guard a write of exactly the 1 MiB input limit from two
// goroutines at once, which took WriteGate over its 1 s deadline on a
// loaded test machine. Its speed is the
// benchmarks' to check; this test checks that every call ends in a valid
// verdict.
func TestPluginTestFirstParty(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join(testdata.Root(), "plugins", "*", "*", "cmd"))
	if err != nil || len(dirs) < 10 {
		t.Fatalf("first-party plugins: %v, %v", dirs, err)
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(testdata.Root(), dir)
		// One at a time: each sends megabytes under a 1 s deadline.
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) {
			path, err := testdata.Build("./" + filepath.ToSlash(rel))
			if err != nil {
				t.Fatal(err)
			}
			if code, out, stderr := runPlugin(t, "test", "--timeout-ms", "20000", path); code != 0 {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out)
			}
		})
	}
}

func TestPluginBuild(t *testing.T) {
	t.Parallel()
	target := filepath.Join(t.TempDir(), "argcheck.wasm")
	code, out, stderr := runPlugin(t, "build", filepath.Join(testdata.Root(), "examples", "guards", "argcheck", "cmd"), "-o", target)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	sum, _ := digestOf(t, target)
	if want := target + "\nsha256 " + sum + "\n"; out != want {
		t.Fatalf("out %q, want %q", out, want)
	}
	if code, _, stderr := runPlugin(t, "build", t.TempDir()); code != 1 || !strings.Contains(stderr, "go build") {
		t.Errorf("empty dir: exit %d, stderr %q", code, stderr)
	}
}

func TestPluginUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"inspect"},
		{"inspect", "a.wasm", "b.wasm"},
		{"test", "--timeout-ms", "soon", "a.wasm"},
		{"test", "--nope", "a.wasm"},
		{"build"},
	} {
		code, out, stderr := runPlugin(t, args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "usage:\n  warden plugin inspect [--json] FILE") {
			t.Errorf("%q: exit %d, out %q, stderr %q", args, code, out, stderr)
		}
	}
	if code, out, _ := runPlugin(t, "help"); code != 0 || !strings.HasPrefix(out, "usage:") {
		t.Errorf("help: exit %d", code)
	}
	// warden help names every plugin command and skill import.
	var out, stderr strings.Builder
	if code := run(context.Background(), []string{"help"}, &out, &stderr); code != 0 {
		t.Fatalf("warden help: exit %d %s", code, stderr.String())
	}
	for _, want := range []string{"\n  skill import DIR ", "\n  plugin new guard|builtin NAME [DIR] ", "\n  plugin build DIR ", "\n  plugin inspect FILE ", "\n  plugin test FILE "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("warden help lacks %q:\n%s", want, out.String())
		}
	}
}
