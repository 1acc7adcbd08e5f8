//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestREADME runs the commands of README.md as they are written, from the
// repository root, and the configuration examples of README.md and
// examples/serve/ with the commands that use them. It replaces only what
// cannot be had on one machine: a port becomes a free loopback port, a path
// outside the checkout a temporary one, the model endpoint a local fake that
// speaks OpenAI's /v1/chat/completions, a remote MCP server a local one.
//
// Every shell command and YAML block of README.md has a case below, either
// run or named as not runnable here with the reason; a command or block
// without a case, or a case without its command, fails the test, so the
// README cannot drift from what works.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI, plugins and the example MCP server")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, yamls := readmeSnippets(string(readme))
	// examples/serve/warden.yaml says in its comments how it is run.
	serveYAML, err := os.ReadFile("../../examples/serve/warden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^# .*?: (warden .*)$`).FindAllStringSubmatch(string(serveYAML), -1) {
		cmds = append(cmds, "examples/serve/warden.yaml: "+m[1])
	}
	r := &readmeRun{root: "../..", tmp: t.TempDir(), top: t}
	r.repl = map[string]string{
		// plugin build writes into the checkout; here into a temporary
		// directory, which inspect and test then read.
		"bin/wasm/argcheck.wasm": filepath.Join(r.tmp, "argcheck.wasm"),
		"myguard.wasm":           filepath.Join(r.tmp, "myguard.wasm"),
		// The plugin author's own package: the example guard stands in.
		"./myguard/cmd": "./examples/guards/argcheck/cmd",
		// plugin new scaffolds a module outside the checkout.
		"../domainguard":                  filepath.Join(r.tmp, "domainguard"),
		"../domainguard/cmd":              filepath.Join(r.tmp, "domainguard", "cmd"),
		"../domainguard/domainguard.wasm": filepath.Join(r.tmp, "domainguard", "domainguard.wasm"),
		"../domainguard/cases.yaml":       filepath.Join(r.tmp, "domainguard", "cases.yaml"),
	}

	seen := map[string]bool{}
	for _, c := range cmds {
		rc, ok := readmeCases[c]
		if !ok {
			t.Errorf("README.md command without a case in readmeCases (run it or say why it cannot run here):\n%s", c)
			continue
		}
		seen[c] = true
		if rc.notHere != "" {
			t.Logf("not run here: %s\n  (%s)", c, rc.notHere)
			continue
		}
		t.Run(c, func(t *testing.T) { rc.run(t, r, c) })
	}
	for _, y := range yamls {
		key := strings.SplitN(y, "\n", 2)[0]
		rc, ok := readmeCases["yaml: "+key]
		if !ok {
			t.Errorf("README.md YAML block without a case in readmeCases (\"yaml: %s\"):\n%s", key, y)
			continue
		}
		seen["yaml: "+key] = true
		t.Run("yaml: "+key, func(t *testing.T) { rc.run(t, r, y) })
	}
	for c := range readmeCases {
		if !seen[c] {
			t.Errorf("readmeCases has %q, which README.md no longer has", c)
		}
	}
}

// readmeSnippets returns README's shell commands, each on one line (a
// trailing backslash joins the next line, a comment is dropped), and its
// YAML blocks.
func readmeSnippets(md string) (cmds, yamls []string) {
	block := regexp.MustCompile("(?ms)^```(sh|yaml)\n(.*?)^```")
	for _, m := range block.FindAllStringSubmatch(md, -1) {
		if m[1] == "yaml" {
			yamls = append(yamls, m[2])
			continue
		}
		var cur string
		for _, line := range strings.Split(m[2], "\n") {
			if strings.HasSuffix(line, "\\") {
				cur += strings.TrimSuffix(line, "\\")
				continue
			}
			line = stripComment(cur + line)
			cur = ""
			if line = strings.Join(strings.Fields(line), " "); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds, yamls
}

// stripComment drops a shell comment: a # that starts a word outside quotes.
func stripComment(line string) string {
	quoted := false
	for i, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case c == '#' && !quoted && (i == 0 || line[i-1] == ' '):
			return line[:i]
		}
	}
	return line
}

// readmeRun is what the commands share: the repository root, a temporary
// directory and the replacements.
type readmeRun struct {
	root, tmp string
	repl      map[string]string
	// top is TestREADME's own T: a server the client commands share
	// lives until the whole test ends.
	top *testing.T
	// client is the environment of the API client commands, set by the
	// export line that names their server and key; admin is the admin key.
	client []string
	admin  string
}

// argv splits a command into its environment assignments and its words:
// double quotes group, a word with * is globbed from the root, and a word
// the replacements name is replaced.
func (r *readmeRun) argv(t *testing.T, cmd string, repl map[string]string) (env, argv []string) {
	t.Helper()
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, c := range cmd + " " {
		switch {
		case c == '"':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	for _, w := range words {
		if v, ok := repl[w]; ok {
			w = v
		} else if v, ok := r.repl[w]; ok {
			w = v
		}
		switch {
		case len(argv) == 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(w):
			env = append(env, w)
		case strings.Contains(w, "*"):
			matches, err := filepath.Glob(filepath.Join(r.root, w))
			if err != nil || len(matches) == 0 {
				t.Fatalf("%s: %s matches nothing", cmd, w)
			}
			for _, m := range matches {
				rel, _ := filepath.Rel(r.root, m)
				argv = append(argv, rel)
			}
		default:
			argv = append(argv, w)
		}
	}
	return env, argv
}

// command is the command to run from the root, in its own process group.
func (r *readmeRun) command(ctx context.Context, env, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// readmeCase is how one README command or YAML block is checked: run, or
// not run here for the reason given.
type readmeCase struct {
	notHere string
	run     func(t *testing.T, r *readmeRun, text string)
}

// exits runs the command to its end and requires its exit status and that
// its output holds each of want, in order.
func exits(code int, want ...string) func(*testing.T, *readmeRun, string) {
	return func(t *testing.T, r *readmeRun, text string) {
		env, argv := r.argv(t, text, nil)
		runExpect(t, r, env, argv, code, want...)
	}
}

// runExpect runs argv with env to its end, requires its exit status and
// each of want in its output, in order, and returns the output.
func runExpect(t *testing.T, r *readmeRun, env, argv []string, code int, want ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := r.command(ctx, env, argv).CombinedOutput()
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if got != code {
		t.Fatalf("exit %d, want %d:\n%s", got, code, out)
	}
	rest := string(out)
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	return string(out)
}

// then runs f after check.
func then(check func(*testing.T, *readmeRun, string), f func(*testing.T, *readmeRun)) func(*testing.T, *readmeRun, string) {
	return func(t *testing.T, r *readmeRun, text string) {
		check(t, r, text)
		f(t, r)
	}
}

// wasmFile requires a WebAssembly module at path.
func wasmFile(path string) func(*testing.T, *readmeRun) {
	return func(t *testing.T, _ *readmeRun) {
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
			t.Fatalf("%s is not a wasm module (%d bytes, %v)", path, len(b), err)
		}
	}
}

var readmeCases = map[string]readmeCase{
	"make demo": {run: exits(0, "examples/scenarios/demo/website.yaml", "--- PASS")},
	"make test": {notHere: "it runs every test, this one among them; it is what CI runs (.ci/run)"},

	"go run ./cmd/warden run examples/scenarios/acceptance/*.yaml": {run: exits(0,
		"--- PASS 01 ", "--- PASS 02 ", "--- PASS 03 ", "--- PASS 04 ", "--- PASS 05 ", "--- PASS 06 ",
		"--- PASS 07 ", "--- PASS 08 ", "--- PASS 09 ", "--- PASS 10 ", "--- PASS 11 ", "--- PASS 12 ")},
	"go run ./cmd/warden run examples/scenarios/tasks/delegation-evidence.yaml": {run: exits(0, "graph:", "t1.n1.d1 space.finder DONE ← t1.n1", "--- PASS delegation")},
	// The example store holds broken skills on purpose: it shows every
	// kind of problem.
	"go run ./cmd/warden skill validate contract/testdata/store": {run: exits(1,
		"ERROR rule 6   cms.article.publish tools.publish_article.success: WRITE tool without success",
		"4 skill(s) checked, 1 dropped")},
	"go run ./cmd/warden plugin build examples/guards/argcheck/cmd -o bin/wasm/argcheck.wasm": {run: then(exits(0, "argcheck.wasm\nsha256 "),
		func(t *testing.T, r *readmeRun) { wasmFile(r.repl["bin/wasm/argcheck.wasm"])(t, r) })},
	"go run ./cmd/warden plugin inspect bin/wasm/argcheck.wasm": {run: exits(0,
		"abi           1", "name          argcheck", "role          guard", "sha256        ")},
	"go run ./cmd/warden plugin test bin/wasm/argcheck.wasm": {run: exits(0, "plugin argcheck@1.0.0", "26 of 26 checks passed")},
	// A plugin author's flow, in a module of its own outside the checkout.
	"go run ./cmd/warden plugin new --warden-replace . guard domainguard ../domainguard": {run: exits(0,
		"domainguard/go.mod\n", "domainguard/domainguard.go\n", "domainguard/domainguard_test.go\n", "domainguard/cmd/main.go\n",
		"domainguard/cases.yaml\n", "domainguard/README.md\n", "domainguard/go.sum\n")},
	"go run ./cmd/warden plugin build ../domainguard/cmd -o ../domainguard/domainguard.wasm": {run: exits(0, "domainguard.wasm\nsha256 ")},
	"go run ./cmd/warden plugin test --cases ../domainguard/cases.yaml ../domainguard/domainguard.wasm": {run: exits(0,
		"plugin domainguard@0.1.0", "✓ case/allowed domain: pass", "✓ case/blocked domain: REJECTED ARG_REJECTED",
		"✓ probe/before/create_website/empty-args: pass", "✓ probe/before/probe_write/empty-args: pass", "51 of 51 checks passed")},
	"go -C ../domainguard test ./...": {run: exits(0, "ok  \tdomainguard")},
	// The scaffolded guard, installed into the README's served warden and
	// attached by a skill upload (its config checked against its schema).
	"go run ./cmd/warden plugins install ../domainguard/domainguard.wasm": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "plugin domainguard@0.1.0 installed for tenant acme: a guard, sha256 ")
	}},
	"go run ./cmd/warden skills put cms.website.guarded examples/tenant/cms.website.guarded.yaml": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "skill cms.website.guarded created (ACTIVE, tools query_space, create_website, guards domainguard@0.1.0)")
	}},
	"GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myguard.wasm ./myguard/cmd": {run: then(exits(0),
		func(t *testing.T, r *readmeRun) { wasmFile(r.repl["myguard.wasm"])(t, r) })},

	// The API client: the export line starts the service as "Running the
	// service" shows it (the fake model, the example MCP server) and
	// names it and a tenant key to the commands after it, which run
	// against it; s_… is the session the first one opens.
	"export WARDEN_SERVER=http://127.0.0.1:8080 WARDEN_KEY=…": {run: func(t *testing.T, r *readmeRun, text string) {
		keys := readmeKeys(t, r, "README.md", "keys.json")
		fake := newFakeOpenAI(r.top, "model-key-for-the-client") // it serves the commands after this one
		_, argv := r.argv(t, "go run ./cmd/warden serve --addr 127.0.0.1:0 --skills examples/skills/cms --keys "+keys.path+
			" --model openai --base-url "+fake.url+"/v1 --model-name my-model --api-key-env MODEL_KEY"+
			` --tools mcp-command --mcp-command "go run ./examples/mcp-cms"`, nil)
		base := readmeServeUntil(t, r.top, r, []string{"MODEL_KEY=model-key-for-the-client"}, argv)
		repl := map[string]string{"WARDEN_SERVER=http://127.0.0.1:8080": "WARDEN_SERVER=" + base, "WARDEN_KEY=…": "WARDEN_KEY=" + keys.tenant}
		var env []string
		for _, w := range strings.Fields(strings.TrimPrefix(text, "export ")) {
			v, ok := repl[w]
			if !ok {
				t.Fatalf("export line: %q is not a variable this test knows", w)
			}
			env = append(env, v)
		}
		r.client, r.admin = env, keys.admin
		// The console is at / beside the API: its page once make console
		// built it, else the page that says to build it.
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_, built := os.Stat(filepath.Join(r.root, "internal", "console", "assets", "app", "index.html"))
		switch {
		case built == nil && (resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html")):
			t.Fatalf("GET /: %d %s, want the console's page", resp.StatusCode, resp.Header.Get("Content-Type"))
		case built != nil && !strings.Contains(string(page), "make console"):
			t.Fatalf("GET / without a built console: %d %s", resp.StatusCode, page)
		}
	}},
	"go run ./cmd/warden sessions new": {run: func(t *testing.T, r *readmeRun, text string) {
		out := readmeClient(t, r, text, 0)
		id := strings.TrimSpace(out)
		if !strings.HasPrefix(id, "s_") || strings.ContainsAny(id, " \n") {
			t.Fatalf("sessions new printed %q, want a session id", out)
		}
		r.repl["s_…"] = id
	}},
	`go run ./cmd/warden sessions send s_… "which tags are there?"`: {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "DONE", fakeAnswer)
	}},
	"go run ./cmd/warden tasks trace s_… t1": {run: func(t *testing.T, r *readmeRun, text string) { readmeClient(t, r, text, 0, "list_tags", "SUCCESS") }},
	"go run ./cmd/warden approvals list":     {run: func(t *testing.T, r *readmeRun, text string) { readmeClient(t, r, text, 0) }},
	"go run ./cmd/warden slots list --key …": {run: func(t *testing.T, r *readmeRun, text string) { readmeClient(t, r, text, 0, "WriteGate") }},
	// A tenant's own plugins and skills, against the same server, with the
	// tenant's key; argcheck.wasm is the one plugin build made.
	"go run ./cmd/warden plugins install bin/wasm/argcheck.wasm": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "plugin argcheck@1.0.0 installed for tenant acme: a guard, sha256 ")
	}},
	"go run ./cmd/warden skill import contract/testdata/store": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 1, "skill cms.article.lifecycle created (ACTIVE, tools query_space, create_article)",
			"skill cms.tag.lookup created (ACTIVE, tools list_tags)",
			"skill cms.article.publish refused: skill_invalid: skill cms.article.publish: 1 problem(s): skill_contract.tools.publish_article.success: rule 6: WRITE tool without success",
			"skill cms.article.archive created (INACTIVE, no tools)", "warden: 1 of 5 skills refused: cms.article.publish")
	}},
	"go run ./cmd/warden skills put cms.tag.lookup examples/tenant/cms.tag.lookup.yaml": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "skill cms.tag.lookup replaced (ACTIVE, tools list_tags, guards argcheck@1.0.0)")
	}},
	"go run ./cmd/warden plugins list": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 0, "PLUGIN", "argcheck  1.0.0", "attached  cms.tag.lookup")
	}},
	"go run ./cmd/warden plugins delete argcheck": {run: func(t *testing.T, r *readmeRun, text string) {
		readmeClient(t, r, text, 1, "warden: plugin_attached: plugin argcheck is attached by skills cms.tag.lookup: detach it from them first")
	}},
	"go run ./cmd/warden --version": {run: exits(0, "warden")},
	"go run ./cmd/warden serve --addr 127.0.0.1:8080 --skills examples/skills/cms --keys keys.json --model openai --base-url https://api.example.com/v1 --model-name my-model --api-key-env MODEL_KEY --tools mcp-command --mcp-command \"go run ./examples/mcp-cms\"": {
		run: func(t *testing.T, r *readmeRun, text string) {
			keys := readmeKeys(t, r, "README.md", "keys.json")
			fake := newFakeOpenAI(t, "model-key-for-the-test")
			env, argv := r.argv(t, text, map[string]string{
				"127.0.0.1:8080":             "127.0.0.1:0",
				"keys.json":                  keys.path,
				"https://api.example.com/v1": fake.url + "/v1",
			})
			base := readmeServe(t, r, append(env, "MODEL_KEY=model-key-for-the-test"), argv)
			readmeTagsCall(t, base, keys.tenant, fake, "my-model")
		},
	},
	"go run ./cmd/warden serve --config examples/serve/warden.yaml --keys keys.json --store sqlite:/var/lib/warden/warden.db": {
		run: func(t *testing.T, r *readmeRun, text string) {
			keys := readmeKeys(t, r, "examples/serve/warden.yaml", "keys.json")
			fake := newFakeOpenAI(t, "openai-key-for-the-test")
			db := filepath.Join(r.tmp, "warden.db")
			env, argv := r.argv(t, text, map[string]string{
				"keys.json":                        keys.path,
				"sqlite:/var/lib/warden/warden.db": "sqlite:" + db,
			})
			// The file's address and endpoint are replaced through their
			// variables, which win over the file.
			env = append(env, "WARDEN_ADDR=127.0.0.1:0", "WARDEN_BASE_URL="+fake.url+"/v1", "OPENAI_API_KEY=openai-key-for-the-test")
			base := readmeServe(t, r, env, argv)
			readmeTagsCall(t, base, keys.tenant, fake, "qwen2.5:7b")
			// The session is in the database.
			var list struct {
				Sessions []struct{ ID string } `json:"sessions"`
			}
			if code := apiCall(t, base, "GET", "/v1/sessions", keys.tenant, "", &list); code != 200 || len(list.Sessions) != 1 {
				t.Fatalf("sessions: %d %+v", code, list)
			}
			if st, err := os.Stat(db); err != nil || st.Size() == 0 {
				t.Fatalf("no SQLite database at %s: %v", db, err)
			}
			// "warden report tools --store sqlite:…" summarises the
			// reliability records serve kept (feedback: true in the file).
			exits(0, "list_tags")(t, r, "go run ./cmd/warden report tools --store sqlite:"+db)
		},
	},
	// The file's own way to run it: no installed warden here, so go run;
	// the keys file is "yours to write" and the store path relative to the
	// checkout, so both come through their variables, as the address and
	// the endpoint do.
	"examples/serve/warden.yaml: warden serve --config examples/serve/warden.yaml": {
		run: func(t *testing.T, r *readmeRun, text string) {
			keys := readmeKeys(t, r, "examples/serve/warden.yaml", "file-keys.json")
			fake := newFakeOpenAI(t, "openai-key-for-the-file")
			env, argv := r.argv(t, strings.TrimPrefix(text, "examples/serve/warden.yaml: "), map[string]string{"warden": "go run ./cmd/warden"})
			argv = append(strings.Fields(argv[0]), argv[1:]...)
			env = append(env, "WARDEN_KEYS="+keys.path, "WARDEN_STORE=sqlite:"+filepath.Join(r.tmp, "file.db"),
				"WARDEN_ADDR=127.0.0.1:0", "WARDEN_BASE_URL="+fake.url+"/v1", "OPENAI_API_KEY=openai-key-for-the-file")
			base := readmeServe(t, r, env, argv)
			readmeTagsCall(t, base, keys.tenant, fake, "qwen2.5:7b")
		},
	},

	"export WARDEN_STORE=postgres:postgres://warden@db.internal:5432/warden":                    {notHere: multiHost},
	`export WARDEN_FORWARD_SECRET="$(cat /etc/warden/forward-secret)"`:                          {notHere: multiHost},
	"go run ./cmd/warden serve --config warden.yaml --instance warden-a --addr 10.0.0.1:8080 &": {notHere: multiHost},
	"go run ./cmd/warden serve --config warden.yaml --instance warden-b --addr 10.0.0.2:8080 &": {notHere: multiHost},

	"yaml: tools: mcp-servers":                           {run: readmeServers},
	"yaml: write-confirm-bypass-tools: [create_article]": {run: readmeSpecSettings},
}

const multiHost = "two instances on two hosts (10.0.0.1, 10.0.0.2) and a PostgreSQL at db.internal; " +
	"TestServeForwarding (forward_test.go) runs two real instances on one PostgreSQL on this machine, " +
	"every request sent to each in turn as a round-robin balancer would"

// readmeClient runs an API client command against the server the export
// line started, requires its exit status and each of want in its output,
// in order, and returns the output. "…" after --key is the admin key.
func readmeClient(t *testing.T, r *readmeRun, text string, code int, want ...string) string {
	t.Helper()
	if r.client == nil {
		t.Fatal("no server: the export line before this command did not run")
	}
	env, argv := r.argv(t, text, map[string]string{"…": r.admin})
	return runExpect(t, r, append(slices.Clone(r.client), env...), argv, code, want...)
}

// readmeKeysFile is a keys.json written from an example.
type readmeKeysFile struct{ path, tenant, admin string }

// readmeKeys writes keys.json as the example in file shows it, with real
// keys for the placeholders.
func readmeKeys(t *testing.T, r *readmeRun, file, name string) readmeKeysFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, file))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\{"tenants":.*\})`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("%s shows no keys.json", file)
	}
	k := readmeKeysFile{path: filepath.Join(r.tmp, strings.ReplaceAll(file, "/", "_")+"."+name),
		tenant: "tenant-key-0123456789abcdef", admin: "admin-key-0123456789abcdef"}
	// The first placeholder is the tenant's key, any other an admin key.
	n := 0
	body := regexp.MustCompile(`"(…|at least 16 characters)"`).ReplaceAllStringFunc(m[1], func(string) string {
		n++
		if n == 1 {
			return `"` + k.tenant + `"`
		}
		return `"` + k.admin + `"`
	})
	if !json.Valid([]byte(body)) || !strings.Contains(body, k.tenant) {
		t.Fatalf("%s: keys.json example %s does not make a keys file: %s", file, m[1], body)
	}
	if err := os.WriteFile(k.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

// readmeServe starts warden serve as the command says and returns its base
// URL once it serves and /healthz and /readyz answer; the test's end stops
// it with SIGINT and requires a clean stop.
func readmeServe(t *testing.T, r *readmeRun, env, argv []string) string {
	t.Helper()
	return readmeServeUntil(t, t, r, env, argv)
}

// readmeServeUntil is readmeServe with the server stopped when until
// ends, a test that may outlive t.
func readmeServeUntil(t, until *testing.T, r *readmeRun, env, argv []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := r.command(ctx, env, argv)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	started := false
	until.Cleanup(func() {
		defer cancel()
		if !started {
			return
		}
		interrupt(cmd.Process.Pid)
		select {
		case err := <-done:
			if err != nil || !strings.Contains(out.String(), "warden: stopped") {
				until.Errorf("serve did not stop cleanly: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			until.Errorf("serve did not stop:\n%s", out.String())
		}
	})
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			for _, p := range []string{"/healthz", "/readyz"} {
				if code := apiCall(t, m[1], "GET", p, "", "", nil); code != 200 {
					t.Fatalf("%s: %d", p, code)
				}
			}
			started = true
			// The example store loads whole: a newcomer's first start
			// logs no dropped skill.
			if strings.Contains(out.String(), "skill dropped") {
				t.Fatalf("serve dropped a skill of the example store:\n%s", out.String())
			}
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
	}
}

// interrupt sends SIGINT to the warden process as Ctrl-C would: to the
// children of go run, which itself would exit 1 on an interrupt, or to pid
// when it has no children. A child may have been forked by any thread.
func interrupt(pid int) {
	var kids []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) == 0 {
		_ = syscall.Kill(pid, syscall.SIGINT)
	}
	for _, k := range kids {
		var c int
		if _, err := fmt.Sscan(k, &c); err == nil {
			_ = syscall.Kill(c, syscall.SIGINT)
		}
	}
}

// readmeTagsCall opens a session and asks for the tags: the fake model
// plans the tag skill, calls list_tags on the example MCP server and
// finishes with what it read.
func readmeTagsCall(t *testing.T, base, key string, fake *fakeOpenAI, model string) {
	t.Helper()
	var sess struct{ ID string }
	if code := apiCall(t, base, "POST", "/v1/sessions", key, "", &sess); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	var res struct {
		Task struct {
			Status string
			Output any
		}
		Events []struct {
			Tool, Outcome string
		}
	}
	if code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", key, `{"text":"which tags are there?"}`, &res); code != 200 {
		t.Fatalf("message: %d %+v", code, res)
	}
	if res.Task.Status != "DONE" || res.Task.Output != fakeAnswer {
		t.Fatalf("task %+v, want DONE with %q", res.Task, fakeAnswer)
	}
	if !slices.ContainsFunc(res.Events, func(e struct{ Tool, Outcome string }) bool {
		return e.Tool == "list_tags" && e.Outcome == "SUCCESS"
	}) {
		t.Fatalf("no successful list_tags in %+v", res.Events)
	}
	fake.check(t, model)
}

// fakeAnswer is what the fake model finishes with.
const fakeAnswer = "tags: news, product, engineering"

// fakeOpenAI is an OpenAI-compatible chat completions endpoint that plays a
// model over the example skill store: it plans the cms.tag.lookup skill,
// calls list_tags, and finishes with the tags it was shown.
type fakeOpenAI struct {
	url, key string
	mu       sync.Mutex
	models   []string
	problems []string
}

func newFakeOpenAI(t *testing.T, key string) *fakeOpenAI {
	f := &fakeOpenAI{key: key}
	ts := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+f.key {
		f.problems = append(f.problems, fmt.Sprintf("%s %s with %q", r.Method, r.URL.Path, r.Header.Get("Authorization")))
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
		return
	}
	var req struct {
		Model    string
		Messages []struct {
			Role    string
			Content any
		}
		Tools []struct {
			Function struct{ Name string }
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.problems = append(f.problems, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.models = append(f.models, req.Model)
	offered := func(name string) bool {
		return slices.ContainsFunc(req.Tools, func(t struct{ Function struct{ Name string } }) bool { return t.Function.Name == name })
	}
	var msg map[string]any
	last := req.Messages[len(req.Messages)-1]
	switch {
	case len(req.Tools) == 0:
		// The planning turn.
		msg = map[string]any{"role": "assistant", "content": `{"nodes":[{"id":"n1","skill_key":"cms.tag.lookup"}]}`}
	case last.Role == "tool":
		text, _ := last.Content.(string)
		if !strings.Contains(text, "engineering") {
			f.problems = append(f.problems, "the tool result lacks the tags: "+text)
		}
		msg = toolCall("builtin_node_finish", `{"output":"`+fakeAnswer+`"}`)
	case offered("list_tags"):
		msg = toolCall("list_tags", `{}`)
	default:
		f.problems = append(f.problems, fmt.Sprintf("list_tags is not offered: %+v", req.Tools))
		msg = map[string]any{"role": "assistant", "content": "I cannot."}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

func toolCall(name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": "call_" + name, "type": "function", "function": map[string]any{"name": name, "arguments": args},
	}}}
}

// check requires that every request was well formed and named model.
func (f *fakeOpenAI) check(t *testing.T, model string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.problems) > 0 {
		t.Fatalf("the fake model saw: %s", strings.Join(f.problems, "; "))
	}
	if len(f.models) == 0 || slices.ContainsFunc(f.models, func(m string) bool { return m != model }) {
		t.Fatalf("models asked for %v, want only %s", f.models, model)
	}
}

// readmeServers runs README's mcp-servers example: the CMS server built
// where the example says (./bin/mcp-cms, here in a temporary directory) and
// a search server on loopback that requires the example's header and
// bearer token, read from a file; then one real API call through both.
func readmeServers(t *testing.T, r *readmeRun, yaml string) {
	bin := filepath.Join(r.tmp, "bin", "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	const token = "search-token-for-the-test"
	tokenFile := filepath.Join(r.tmp, "search-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refused []string
	served := 0
	search := sdk.NewServer(&sdk.Implementation{Name: "search", Version: "1"}, nil)
	search.AddTool(&sdk.Tool{Name: "search_web", Description: "Search the web.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "nothing"}}}, nil
		})
	mh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return search }, nil)
	ss := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+token || req.Header.Get("X-Tenant") != "acme" {
			mu.Lock()
			refused = append(refused, fmt.Sprintf("%s %q %q", req.Method, req.Header.Get("Authorization"), req.Header.Get("X-Tenant")))
			mu.Unlock()
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		served++
		mu.Unlock()
		mh.ServeHTTP(w, req)
	}))
	// Closed after serve stops (cleanups run last first); serve holds a
	// stream open to it, which Close would wait for.
	t.Cleanup(func() {
		ss.CloseClientConnections()
		ss.Close()
	})

	cfg := yaml
	for old, new := range map[string]string{
		"./bin/mcp-cms":               bin,
		"https://search.internal/mcp": ss.URL,
		"/run/secrets/search-token":   tokenFile,
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("the example lacks %s:\n%s", old, yaml)
		}
		cfg = strings.ReplaceAll(cfg, old, new)
	}
	cfgFile := filepath.Join(r.tmp, "servers.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := readmeKeys(t, r, "README.md", "servers-keys.json")
	fake := newFakeOpenAI(t, "model-key-for-the-servers")
	base := readmeServe(t, r, []string{"MODEL_KEY=model-key-for-the-servers"}, []string{
		"go", "run", "./cmd/warden", "serve", "--config", cfgFile, "--addr", "127.0.0.1:0",
		"--skills", "examples/skills/cms", "--keys", keys.path,
		"--model", "openai", "--base-url", fake.url + "/v1", "--model-name", "my-model", "--api-key-env", "MODEL_KEY",
	})
	readmeTagsCall(t, base, keys.tenant, fake, "my-model")
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 || served == 0 {
		t.Fatalf("the search server refused %v and served %d requests", refused, served)
	}
}

// readmeSpecSettings serves README's settings example with the keys.json
// that shows gateway_keys: the identity headers are refused on the
// tenant's plain key and pass on its gateway key; the agent's own locale
// (en, over the file's zh-CN) is the one its texts are in.
func readmeSpecSettings(t *testing.T, r *readmeRun, yaml string) {
	readme, err := os.ReadFile(filepath.Join(r.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\{"tenants":[^` + "`" + `]*"gateway_keys"[^` + "`" + `]*\})`).FindStringSubmatch(string(readme))
	if m == nil {
		t.Fatal("README.md shows no keys.json with gateway_keys")
	}
	const tenant, gateway = "tenant-key-0123456789abcdef", "gateway-key-0123456789abcdef"
	n := 0
	body := strings.ReplaceAll(m[1], `"…"`, "\x00")
	body = regexp.MustCompile("\x00").ReplaceAllStringFunc(body, func(string) string {
		n++
		return map[int]string{1: `"` + tenant + `"`, 2: `"` + gateway + `"`}[n]
	})
	keys := filepath.Join(r.tmp, "gateway-keys.json")
	cfgFile := filepath.Join(r.tmp, "settings.yaml")
	if n != 2 || !json.Valid([]byte(body)) {
		t.Fatalf("keys.json example %s makes %s", m[1], body)
	}
	for path, b := range map[string]string{keys: body, cfgFile: yaml} {
		if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fake := newFakeOpenAI(t, "model-key-for-the-settings")
	base := readmeServe(t, r, []string{"MODEL_KEY=model-key-for-the-settings"}, []string{
		"go", "run", "./cmd/warden", "serve", "--config", cfgFile, "--addr", "127.0.0.1:0",
		"--skills", "examples/skills/cms", "--keys", keys,
		"--model", "openai", "--base-url", fake.url + "/v1", "--model-name", "my-model", "--api-key-env", "MODEL_KEY",
		"--tools", "mcp-command", "--mcp-command", "go run ./examples/mcp-cms",
	})
	post := func(key, path string, out any) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(`{"text":"which tags are there?"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-User-Id", "10086")
		req.Header.Set("X-Organ-Id", "7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	var sess struct{ ID string }
	if code := apiCall(t, base, "POST", "/v1/sessions", gateway, "", &sess); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	var refused struct{ Error struct{ Code string } }
	if code := post(tenant, "/v1/sessions/"+sess.ID+"/messages?wait=5m", &refused); code != 403 || refused.Error.Code != "platform_untrusted" {
		t.Fatalf("the identity on the tenant's key: %d %+v", code, refused)
	}
	var res struct {
		Task   struct{ Status, Output string }
		Events []struct{ Tool, Outcome, Message string }
	}
	if code := post(gateway, "/v1/sessions/"+sess.ID+"/messages?wait=5m", &res); code != 200 || res.Task.Status != "DONE" || res.Task.Output != fakeAnswer {
		t.Fatalf("the identity on the gateway key: %d %+v", code, res.Task)
	}
	if !slices.ContainsFunc(res.Events, func(e struct{ Tool, Outcome, Message string }) bool {
		return e.Tool == "list_tags" && e.Outcome == "SUCCESS" && e.Message == "tool list_tags succeeded"
	}) {
		t.Fatalf("no list_tags success in English in %+v", res.Events)
	}
}

// TestReadmeSnippets: how README's blocks become commands.
func TestReadmeSnippets(t *testing.T) {
	md := "text `inline` is not a command\n" +
		"```sh\n" +
		"make demo   # a comment\n" +
		"\n" +
		"go run ./cmd/warden serve --a 1 \\\n" +
		"  --mcp-command \"go run ./x # not a comment\" \\\n" +
		"  --b 2\n" +
		"cmd & # background\n" +
		"```\n" +
		"```go\nfunc main() {}\n```\n" +
		"```yaml\ntools: x\nk: v   # kept\n```\n"
	cmds, yamls := readmeSnippets(md)
	wantCmds := []string{
		"make demo",
		`go run ./cmd/warden serve --a 1 --mcp-command "go run ./x # not a comment" --b 2`,
		"cmd &",
	}
	if !slices.Equal(cmds, wantCmds) {
		t.Fatalf("commands %q\nwant %q", cmds, wantCmds)
	}
	if want := []string{"tools: x\nk: v   # kept\n"}; !slices.Equal(yamls, want) {
		t.Fatalf("yaml %q, want %q", yamls, want)
	}

	r := &readmeRun{root: "../..", repl: map[string]string{"a.wasm": "/tmp/a.wasm"}}
	env, argv := r.argv(t, `GOOS=wasip1 go build -o a.wasm --mcp-command "go run ./x" examples/serve/*.yaml`, map[string]string{"./x": "not whole words"})
	if !slices.Equal(env, []string{"GOOS=wasip1"}) ||
		!slices.Equal(argv, []string{"go", "build", "-o", "/tmp/a.wasm", "--mcp-command", "go run ./x", "examples/serve/warden.yaml"}) {
		t.Fatalf("env %q argv %q", env, argv)
	}
}
