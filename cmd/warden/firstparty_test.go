package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/internal/testdata"
)

// plugins are the first-party slots in the order a trace names them, with
// their module files.
var traceSlots = []struct{ slot, file string }{
	{"ArgPolicy", "argpolicy"}, {"ArgBinding", "argbinding"}, {"ParamContract", "paramcontract"},
	{"Fingerprint", "fingerprint"}, {"WriteGate", "writegate"}, {"ResponseContract", "responsecontract"},
	{"Evidence", "evidence"}, {"control", "control"}, {"node", "node"}, {"env", "env"},
}

// testSet is the set the tests' warden runs load (TestMain's cache).
func testSet(t *testing.T) *firstparty.Set {
	t.Helper()
	root, err := cacheRoot(os.Getenv(cacheEnv))
	if err != nil {
		t.Fatal(err)
	}
	set, err := firstPartySet(context.Background(), "", root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The trace starts by naming each first-party plugin once: as wasm (the
// default, and --wasm) with its generation and the digest of the module
// it runs; with --native as native.
func TestRunNamesPlugins(t *testing.T) {
	t.Parallel()
	set := testSet(t)
	dir := t.TempDir()
	for _, s := range traceSlots {
		writeFile(t, filepath.Join(dir, s.file+".wasm"), string(set.Modules[s.file]))
	}
	wasmLines := func(t *testing.T, out string) {
		lines := strings.Split(out, "\n")
		for i, s := range traceSlots {
			d := host.Digest(set.Modules[s.file])
			want := regexp.MustCompile(`^plugin ` + s.slot + ` gen 1 sha256:` + d[:12] + `… [a-z.-]+@1\.0\.0 \(wasm\)$`)
			if i >= len(lines) || !want.MatchString(lines[i]) {
				t.Fatalf("line %d is not %s:\n%s", i+1, want, out)
			}
		}
		if !strings.HasPrefix(lines[len(traceSlots)], "=== 09 ") {
			t.Fatalf("the plugin lines are not just before the scenario:\n%s", out)
		}
	}
	tests := []struct {
		name  string
		args  []string
		check func(*testing.T, string)
	}{
		{name: "default is wasm", check: wasmLines},
		{name: "--wasm", args: []string{"--wasm"}, check: wasmLines},
		{name: "--plugins DIR", args: []string{"--plugins", dir}, check: wasmLines},
		{name: "--native", args: []string{"--native"}, check: func(t *testing.T, out string) {
			want := "plugin ArgPolicy argpolicy@1.0.0 (native)\nplugin ArgBinding argbinding@1.0.0 (native)\n" +
				"plugin ParamContract paramcontract@1.0.0 (native)\nplugin Fingerprint fingerprint@1.0.0 (native)\n" +
				"plugin WriteGate writegate@1.0.0 (native)\nplugin ResponseContract responsecontract@1.0.0 (native)\n" +
				"plugin Evidence evidence@1.0.0 (native)\nplugin control builtin-control@1.0.0 (native)\n" +
				"plugin node builtin-node@1.0.0 (native)\nplugin env builtin.env@1.0.0 (native)\n=== 09 "
			if !strings.HasPrefix(out, want) {
				t.Fatalf("stdout does not start with\n%s\n%s", want, out)
			}
		}},
		{name: "--json", args: []string{"--json"}, check: func(t *testing.T, out string) {
			lines := strings.Split(out, "\n")
			for i, s := range traceSlots {
				var got map[string]any
				if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				want := map[string]any{"kind": "PLUGIN", "plugin": s.slot, "runtime": "wasm", "generation": 1.0,
					"digest": "sha256:" + host.Digest(set.Modules[s.file]), "source": string(set.Origin),
					"module": "sha256:" + host.Digest(set.Shared)}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("line %d: %s = %v, want %v", i+1, k, got[k], v)
					}
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runRun(t, append(tt.args, acceptance+"09-query-then-finish.yaml")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			tt.check(t, out)
		})
	}
}

func TestRunPluginErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	partial := t.TempDir()
	writeFile(t, filepath.Join(partial, "argpolicy.wasm"), "\x00asm")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"empty plugin dir", []string{"--plugins", empty}, "warden run: firstparty: " + empty + ": no first-party module\n"},
		{"partial plugin dir", []string{"--plugins", partial}, "warden run: firstparty: " + partial + ": incomplete set of first-party modules: " +
			"no argbinding.wasm, paramcontract.wasm, fingerprint.wasm, writegate.wasm, responsecontract.wasm, evidence.wasm, control.wasm, node.wasm, env.wasm (nor firstparty.wasm, which serves them all)\n"},
		{"native and plugins", []string{"--native", "--plugins", empty}, "warden run: --native runs the plugins in-process; drop --wasm and --plugins\n"},
		{"native and wasm", []string{"--native", "--wasm"}, "warden run: --native runs the plugins in-process; drop --wasm and --plugins\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runRun(t, append(tt.args, acceptance+"09-query-then-finish.yaml")...)
			if code != 2 || errs != tt.stderr || out != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q; want 2, %q", code, errs, out, tt.stderr)
			}
		})
	}
}

// trimmedWarden is warden built as a release would be built without make
// build: -trimpath, so it knows no source path; built once for the tests.
func trimmedWarden(t *testing.T) string {
	t.Helper()
	trimmed.once.Do(func() {
		out, err := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(tempRoot, "warden-trimmed"), ".").CombinedOutput()
		if err != nil {
			trimmed.err = fmt.Errorf("build warden: %v\n%s", err, out)
		}
	})
	if trimmed.err != nil {
		t.Fatal(trimmed.err)
	}
	return filepath.Join(tempRoot, "warden-trimmed")
}

var trimmed struct {
	once sync.Once
	err  error
}

// A warden binary built without its plugins (not by make build) and with
// no source tree to build them from says how to get them, and runs
// --native.
func TestRunWithoutPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	t.Parallel()
	bin := trimmedWarden(t)
	scenarioFile, err := filepath.Abs(acceptance + "09-query-then-finish.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append(append([]string{"run"}, args...), scenarioFile)...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	code, out := run()
	want := "warden run: firstparty: this warden binary has no embedded plugins; build it with `make build`, pass --plugins DIR, " +
		"or --native (no source tree of github.com/agentwarden/warden here)\n"
	if code != 2 || out != want {
		t.Fatalf("exit %d, output %q; want 2, %q", code, out, want)
	}
	if code, out := run("--native"); code != 0 || !strings.Contains(out, "--- PASS 09 ") {
		t.Fatalf("--native: exit %d\n%s", code, out)
	}
}

// The first run from a checkout builds the plugins into the cache and says
// so; the next one, another process, finds them there without building.
func TestRunReusesPluginBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and the plugins")
	}
	t.Parallel()
	// From cmd/warden, the binary finds the source tree above it.
	bin := trimmedWarden(t)
	root := t.TempDir()
	// The plugins' cache is fresh; compiled code is the tests' shared one.
	if err := os.Symlink(compiledDir(os.Getenv(cacheEnv)), compiledDir(root)); err != nil {
		t.Fatal(err)
	}
	run := func() (string, string) {
		cmd := exec.Command(bin, "run", acceptance+"09-query-then-finish.yaml")
		cmd.Env = append(os.Environ(), cacheEnv+"="+root)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out1, err1 := run()
	if !strings.HasPrefix(err1, "warden: building the first-party plugins from "+testdata.Root()+" into "+filepath.Join(root, "plugins")+"/") {
		t.Fatalf("first run did not build:\n%s", err1)
	}
	entries, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache holds %v (%v), want one set", entries, err)
	}
	out2, err2 := run()
	if err2 != "" {
		t.Fatalf("second run wrote to stderr:\n%s", err2)
	}
	if plugins := func(out string) string { return out[:strings.Index(out, "===")] }; plugins(out1) != plugins(out2) || !strings.Contains(out2, "--- PASS 09 ") {
		t.Fatalf("runs differ:\n%s\n%s", out1, out2)
	}
	// The same modules as the tests' own build of the same sources.
	set := testSet(t)
	b, err := os.ReadFile(filepath.Join(root, "plugins", entries[0].Name(), "firstparty.wasm"))
	if err != nil || host.Digest(b) != host.Digest(set.Shared) {
		t.Fatalf("firstparty.wasm differs from the tests' build (%v)", err)
	}
}
