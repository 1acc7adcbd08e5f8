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
		"exports       _initialize, warden_abi_version, warden_handle, warden_input, warden_manifest",
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
		"✓ probe/before/empty-args: pass",
		"✓ probe/before/deep-args: pass",
		"✓ probe/before/unicode: pass",
		"✓ deterministic: 10 request(s) sent again in reverse order gave the same verdicts",
		"16 of 16 checks passed",
	); len(m) > 0 {
		t.Fatalf("missing lines %q in\n%s", m, out)
	}

	code, out, _ = runPlugin(t, "test", testdata.Wasm(t, "panichandler"))
	if code != 1 {
		t.Fatalf("panichandler: exit %d\n%s", code, out)
	}
	if m := missingLines(out,
		"✗ probe/before/empty-args: plugin trapped (PLUGIN_TRAP): panic: boom",
		"✗ probe/before/near-input-limit: plugin trapped (PLUGIN_TRAP): panic: boom",
		"6 of 16 checks passed",
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
	if c, _ := rep.Result("limits"); c.OK || c.Detail != "of 40 calls, 40 call(s) hit the 50ms deadline" {
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
		"✓ probe/before/empty-args: pass",
		"✗ probe/before/deep-args: plugin trapped (PLUGIN_TRAP): panic: runtime error: index out of range [64] with length 64",
		"✓ probe/before/near-input-limit: pass",
		"15 of 16 checks passed",
	); len(m) > 0 {
		t.Fatalf("deepnest: missing lines %q in\n%s", m, out)
	}
}

// TestPluginTestFirstParty: every first-party plugin passes `warden plugin
// test` as built, under the default policy.
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
			if code, out, stderr := runPlugin(t, "test", path); code != 0 {
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
}
