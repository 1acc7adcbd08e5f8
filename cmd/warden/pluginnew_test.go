package main

import (
	"bytes"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testdata"
)

// authorPackages are the Warden packages a plugin author is promised
// (docs/PLUGINS.md): a scaffolded module imports nothing else of Warden's.
var authorPackages = map[string]bool{
	"github.com/agentwarden/warden/abi":             true,
	"github.com/agentwarden/warden/abi/guest":       true,
	"github.com/agentwarden/warden/host":            true,
	"github.com/agentwarden/warden/host/plugintest": true,
}

// TestPluginNewOutside scaffolds a guard and a builtin, each in a module
// of its own outside the repository (a temporary directory whose go.mod
// replaces the Warden module by this checkout), then builds each with
// `warden plugin build` and runs `warden plugin test --cases` on it, as
// generated, and its own go test, which uses only the public packages.
func TestPluginNewOutside(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		role, name string
		lines      []string
	}{
		{"guard", "domainguard", []string{
			"plugin domainguard@0.1.0 (direct, sha256 ",
			"✓ case/blocked domain: REJECTED ARG_REJECTED: 域名 evil.org 在禁止名单中（evil.org）。下一步：调用 builtin_node_follow_up 请用户换一个域名；不要自行选择",
			"✓ case/blocked subdomain: REJECTED ARG_REJECTED: the domain shop.evil.org is blocked (evil.org). Next: ask the user with builtin_node_follow_up for another domain; do not pick one yourself",
			"✓ probe/before/create_website/near-input-limit: pass",
			"✓ probe/before/search_websites/empty-args: pass",
			"✓ probe/before/probe_write/deep-args: pass",
			"51 of 51 checks passed",
		}},
		{"builtin", "wordcount", []string{
			"plugin wordcount@0.1.0 (direct, sha256 ",
			"✓ case/counts words: SUCCESS: 共 3 个词",
			"✓ probe/wordcount/unicode: REJECTED ARG_REJECTED: 参数 text 须是字符串。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户",
			"19 of 19 checks passed",
		}},
	} {
		t.Run(tt.role, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), tt.name)
			code, out, stderr := runPlugin(t, "new", "--module", "example.com/"+tt.name, "--warden-replace", testdata.Root(), tt.role, tt.name, dir)
			if code != 0 || stderr != "" {
				t.Fatalf("new: exit %d, stderr %s", code, stderr)
			}
			file := strings.ReplaceAll(tt.name, ".", "_")
			for _, f := range []string{"go.mod", file + ".go", file + "_test.go", "cmd/main.go", "cases.yaml", "README.md", "go.sum"} {
				if !strings.Contains(out, filepath.Join(dir, f)+"\n") {
					t.Errorf("new did not list %s:\n%s", f, out)
				}
			}
			gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(gomod), "module example.com/"+tt.name+"\n") ||
				!strings.Contains(string(gomod), "\nreplace github.com/agentwarden/warden => "+testdata.Root()+"\n") {
				t.Errorf("go.mod:\n%s", gomod)
			}
			checkImports(t, dir)

			wasm := filepath.Join(dir, tt.name+".wasm")
			if code, out, stderr := runPlugin(t, "build", filepath.Join(dir, "cmd"), "-o", wasm); code != 0 || !strings.HasPrefix(out, wasm+"\nsha256 ") {
				t.Fatalf("build: exit %d, out %q, stderr %s", code, out, stderr)
			}
			code, out, stderr = runPlugin(t, "test", "--cases", filepath.Join(dir, "cases.yaml"), wasm)
			if code != 0 || stderr != "" {
				t.Fatalf("test: exit %d, stderr %q\n%s", code, stderr, out)
			}
			if m := missingPrefixes(out, tt.lines...); len(m) > 0 {
				t.Fatalf("test: missing lines %q in\n%s", m, out)
			}

			gotest := exec.CommandContext(t.Context(), "go", "test", "-count=1", "./...")
			gotest.Dir = dir
			if b, err := gotest.CombinedOutput(); err != nil || !strings.Contains(string(b), "ok  \texample.com/"+tt.name) {
				t.Fatalf("go test in the new module: %v\n%s", err, b)
			}
		})
	}
}

// checkImports requires every Go file of the module in dir to be
// gofmt-formatted and to import, of Warden's, only the packages promised to
// authors.
func checkImports(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
			t.Errorf("%s is not gofmt-formatted (%v)", p, err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/agentwarden/warden") && !authorPackages[path] {
				t.Errorf("%s imports %s, which plugin authors are not promised", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// missingPrefixes reports the entries of want that start no line of out.
func missingPrefixes(out string, want ...string) []string {
	var missing []string
	for _, w := range want {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, w) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

// TestPluginNewWithoutReplace: without --warden-replace the module is
// written as it will be once Warden is published, and new says what is
// missing until then.
func TestPluginNewWithoutReplace(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "g")
	code, out, stderr := runPlugin(t, "new", "guard", "ipguard", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want := "github.com/agentwarden/warden is not published: add a replace to a checkout (or run again with --warden-replace DIR), then go mod tidy in " + dir + "\n"; !strings.HasSuffix(out, want) {
		t.Errorf("out %q\nwant suffix %q", out, want)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module ipguard\n\ngo 1.26\n\nrequire github.com/agentwarden/warden v0.0.0-00010101000000-000000000000\n"; string(gomod) != want {
		t.Errorf("go.mod %q, want %q", gomod, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); !os.IsNotExist(err) {
		t.Errorf("go.sum: %v, want none", err)
	}
}

// TestPluginNewErrors: every bad input is refused with the reason, and
// nothing is written.
func TestPluginNewErrors(t *testing.T) {
	t.Parallel()
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	notWarden := t.TempDir()
	if err := os.WriteFile(filepath.Join(notWarden, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"new", "policy", "x"}, 2, `warden plugin new: "policy" is not guard or builtin`},
		{[]string{"new", "guard"}, 2, "usage:"},
		{[]string{"new", "guard", "Domain"}, 1, `warden plugin new: name "Domain": want 1-64 of [a-z0-9_.-], starting with a letter`},
		{[]string{"new", "builtin", "unit.conv"}, 1, `warden plugin new: name "unit.conv": want 1-64 of [a-z0-9_-], starting with a letter (it is the tool's name too)`},
		{[]string{"new", "builtin", "builtin_node_finish"}, 1, `warden plugin new: name "builtin_node_finish": the builtin_ prefix is the runtime's own`},
		{[]string{"new", "--module", "a b", "guard", "x"}, 1, `warden plugin new: module path "a b": want a Go module path such as example.com/x`},
		{[]string{"new", "guard", "x", full}, 1, "warden plugin new: " + full + " exists and is not empty"},
		{[]string{"new", "--warden-replace", notWarden, "guard", "x", filepath.Join(full, "y")}, 1,
			"warden plugin new: --warden-replace " + notWarden + `: its go.mod is module "example.com/other", not github.com/agentwarden/warden`},
	} {
		code, out, stderr := runPlugin(t, tt.args...)
		if code != tt.code || out != "" || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%q: exit %d, out %q, stderr %q\nwant exit %d and %q", tt.args, code, out, stderr, tt.code, tt.stderr)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want the one it had", full, len(entries))
	}
}
