package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentwarden/warden/internal/console"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// TestConsoleRoutes sends the console's page and files to the console and
// every other request, whatever the console embeds, to the API.
func TestConsoleRoutes(t *testing.T) {
	t.Parallel()
	ui, err := console.New(fstest.MapFS{
		"index.html":       {Data: []byte("<title>console</title>")},
		"assets/index.js":  {Data: []byte("1")},
		"v1/sessions":      {Data: []byte("shadow")},
		"healthz":          {Data: []byte("shadow")},
		"metrics/x":        {Data: []byte("shadow")},
		"openapi.json":     {Data: []byte("shadow")},
		"admin/v1/slots":   {Data: []byte("shadow")},
		"readyz/index.htm": {Data: []byte("shadow")},
	})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("api")) })
	h := consoleRoutes(ui, api)
	tests := []struct {
		name, method, path, want string
	}{
		{"page", "GET", "/", "console"},
		{"page by name", "GET", "/index.html", "console"},
		{"page, HEAD", "HEAD", "/", ""},
		{"asset", "GET", "/assets/index.js", "1"},
		{"unknown asset", "GET", "/assets/nope.js", "api"},
		{"POST /", "POST", "/", "api"},
		{"API route", "GET", "/v1/sessions", "api"},
		{"API prefix alone", "GET", "/v1", "api"},
		{"admin", "GET", "/admin/v1/slots", "api"},
		{"healthz", "GET", "/healthz", "api"},
		{"readyz below", "GET", "/readyz/index.htm", "api"},
		{"openapi", "GET", "/openapi.json", "api"},
		{"metrics below", "GET", "/metrics/x", "api"},
		{"unknown path", "GET", "/nope", "api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if got := rec.Body.String(); !strings.Contains(got, tt.want) || (tt.want == "" && got != "") || (tt.want != "api" && got == "api") {
				t.Fatalf("%s %s: %q, want %q", tt.method, tt.path, got, tt.want)
			}
		})
	}
}

// needTool finds an external tool a test drives: missing, it fails the
// test under CI=true and skips it otherwise.
func needTool(t *testing.T, name string, candidates ...string) string {
	t.Helper()
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true (tried %s)", name, strings.Join(candidates, ", "))
	}
	t.Skipf("%s not found (tried %s)", name, strings.Join(candidates, ", "))
	return ""
}

// findNode finds a Node of version 20 or later, which playwright-core
// needs: $WARDEN_NODE, the node on PATH, or the Node 22 that .ci/run
// installs for the MCP conformance suite (internal/conformance).
func findNode(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("WARDEN_NODE"), "node"}
	root := os.Getenv("WARDEN_NPM_CACHE")
	if home, err := os.UserHomeDir(); root == "" && err == nil {
		root = filepath.Join(home, ".cache", "warden", "npm")
	}
	if root != "" {
		candidates = append(candidates, filepath.Join(root, "node@22.23.3", "node_modules", ".bin", "node"))
	}
	var seen []string
	for _, c := range candidates {
		if c == "" {
			continue
		}
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := exec.Command(p, "-p", "process.versions.node").Output()
		version := strings.TrimSpace(string(out))
		if major, _, _ := strings.Cut(version, "."); err == nil && atoi(major) >= 20 {
			return p
		}
		seen = append(seen, p+" is Node "+version)
	}
	msg := "no Node 20 or later for playwright-core (set WARDEN_NODE)"
	if len(seen) > 0 {
		msg += ": " + strings.Join(seen, ", ")
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newestUnder is the latest modification time of the files under paths.
func newestUnder(t *testing.T, paths ...string) time.Time {
	t.Helper()
	var newest time.Time
	for _, p := range paths {
		err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(newest) {
				newest = info.ModTime()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return newest
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func modTime(p string) time.Time {
	info, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// ensureConsole builds what make console would when it is missing or older
// than its sources, as internal/testdata builds wasm: npm ci for the
// front end's packages (playwright-core among them), then the Vite build
// into internal/console/assets/app, which the warden built next embeds.
func ensureConsole(t *testing.T, npm string) string {
	t.Helper()
	root := testdata.Root()
	web := filepath.Join(root, "web")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(npm, args...)
		cmd.Dir = web
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	lock := filepath.Join(web, "package-lock.json")
	if installed := modTime(filepath.Join(web, "node_modules", ".package-lock.json")); installed.IsZero() || installed.Before(modTime(lock)) {
		run("ci", "--no-audit", "--no-fund")
	}
	index := filepath.Join(root, "internal", "console", "assets", "app", "index.html")
	src := newestUnder(t, filepath.Join(web, "src"), filepath.Join(web, "index.html"), filepath.Join(web, "vite.config.js"), lock)
	if built := modTime(index); built.IsZero() || built.Before(src) {
		run("run", "build")
	}
	return web
}

// consoleFixture is killFixture's skill with the website's name marked
// sensitive, and keys for a tenant and an admin.
func consoleFixture(t *testing.T) (skills, keys, script string) {
	t.Helper()
	skills, keys = killFixture(t)
	prof := filepath.Join(skills, "skill_profile.yaml")
	src, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	const at = "        timeoutMs: 60000\n"
	if !strings.Contains(string(src), at) {
		t.Fatalf("the kill fixture's write has no %q to put the sensitive name after", at)
	}
	writeFile(t, prof, strings.Replace(string(src), at, at+"        args:\n          name: {label: Website name, sensitive: true, sources: [USER, MODEL]}\n", 1))
	dir := t.TempDir()
	script = filepath.Join(dir, "script.json")
	writeFile(t, script, `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Shop Front Site","domain":"shop.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create shop.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"shop.example.com created"}}]},
		{"tool_calls":[{"name":"builtin_node_follow_up","arguments":{"question":"What should the site be called?","expectedFields":["name"]}}]},
		{"tool_calls":[{"name":"find_website","arguments":{"domain":"shop.example.com"}}]},
		{"expect":{"tool":"find_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"the site is called Autumn Sale"}}]}]`)
	return skills, keys, script
}

// TestConsoleBrowser drives the console in headless Chromium
// (web/tests/console.mjs, playwright-core) against a warden serve over the
// example MCP server: a bad key refused, a tenant's login, a write held
// from the CLI appearing in an open approvals tab with the pending count
// over the tenant's event stream (no list of approvals read meanwhile),
// a message whose write is held (its event naming every guard's
// generation), the pending approval with its masked
// summary, CONFIRM, who answered it and when, the console in Chinese and
// back, the task reaching DONE in a tab that follows the event
// stream, a follow-up question answered in the page (seen waiting and
// gone in the approvals tab), a third task failing
// at run time read with its code and cause (graph and trace ending as it
// did), no sensitive value in any page or API answer about the tasks, not
// found pages, the failed and the waiting sessions found by filter, a
// refused key sent back to the login, a 30 KB message folded; the tenant's guard installed
// from a file, a skill attaching it uploaded (its problems listed first),
// the guard's deletion refused while attached, then the skill and the
// guard deleted, each view checked at a phone's width; and, as
// admin, two generations of a slot installed and rolled back (no chart
// label overlapping another at 1,280 or 390 px), its rollout and its
// history with each generation's counters, a rollback to a chosen kept
// generation, and every
// tenant's failed sessions listed. Screenshots
// go to $WARDEN_ARTIFACTS, or a directory the test logs.
func TestConsoleBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds warden and the console, drives Chromium")
	}
	t.Parallel()
	chromium := needTool(t, "chromium", os.Getenv("WARDEN_CHROMIUM"), "/usr/bin/chromium", "chromium")
	node := findNode(t)
	npm := needTool(t, "npm", "npm")
	began := time.Now()
	web := ensureConsole(t, npm)

	artifacts := os.Getenv("WARDEN_ARTIFACTS")
	if artifacts == "" {
		dir, err := os.MkdirTemp("", "console-artifacts-")
		if err != nil {
			t.Fatal(err)
		}
		artifacts = dir
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", artifacts)

	warden := buildBin(t, "warden", ".")
	t.Logf("console and warden built: %v", time.Since(began).Round(time.Millisecond))
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	moduleA, moduleB := testdata.Wasm(t, "good"), testdata.Wasm(t, "goodv2")
	a, err := os.ReadFile(moduleA)
	if err != nil {
		t.Fatal(err)
	}
	sumA := sha256.Sum256(a)
	guard := testdata.Wasm(t, "domaindeny")
	g, err := os.ReadFile(guard)
	if err != nil {
		t.Fatal(err)
	}
	sumGuard := sha256.Sum256(g)

	_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
	skills, keys, script := consoleFixture(t)
	srv, base := start(t, regexp.MustCompile(`serving on (http://\S+)`), warden,
		"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", "sqlite:"+filepath.Join(t.TempDir(), "warden.db"),
		"--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL)

	t.Logf("warden serving: %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("tests", "console.mjs"))
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "WARDEN_URL="+base, "WARDEN_BIN="+warden, "SECRET=Shop Front Site", "TENANT_KEY="+tenantKey, "ADMIN_KEY="+adminKey, "CHROMIUM="+chromium,
		"ARTIFACTS="+artifacts, "MODULE_A="+moduleA, "MODULE_B="+moduleB, "DIGEST_A="+hex.EncodeToString(sumA[:]),
		"GUARD_MODULE="+guard, "GUARD_DIGEST="+hex.EncodeToString(sumGuard[:]))
	// The browser is the script's child: stop the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	browsing := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("browser script (%v):\n%s", time.Since(browsing).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("browser script: %v\nwarden:\n%s", err, srv.out.String())
	}

	// What the browser did, as the API and the MCP server see it.
	// The console's session, whose last task failed, and two waiting for
	// approval: the one the CLI left, and the one of the 30 KB message.
	var list struct {
		Sessions []struct{ ID, Status string }
	}
	if code := apiCall(t, base, "GET", "/v1/sessions?status=FAILED", tenantKey, "", &list); code != 200 || len(list.Sessions) != 1 {
		t.Fatalf("failed sessions: %d %+v", code, list)
	}
	var waiting struct{ Sessions []struct{ ID, Status string } }
	if code := apiCall(t, base, "GET", "/v1/sessions?status=SUSPENDED", tenantKey, "", &waiting); code != 200 || len(waiting.Sessions) != 2 {
		t.Fatalf("waiting sessions: %d %+v", code, waiting)
	}
	var sess struct {
		Tasks []struct{ Status, Output, Reason string }
	}
	if code := apiCall(t, base, "GET", "/v1/sessions/"+list.Sessions[0].ID, tenantKey, "", &sess); code != 200 ||
		len(sess.Tasks) != 3 || sess.Tasks[0].Status != "DONE" || sess.Tasks[0].Output != "shop.example.com created" ||
		sess.Tasks[1].Status != "DONE" || sess.Tasks[1].Output != "the site is called Autumn Sale" || sess.Tasks[2].Status != "FAILED" {
		t.Fatalf("session: %d %+v", code, sess)
	}
	// The server's log names the run's failure, never the sensitive name.
	if log := srv.out.String(); strings.Contains(log, "Shop Front Site") || !strings.Contains(log, "run failed") {
		t.Fatalf("the server log shows the sensitive name, or not the failure:\n%s", log)
	}
	// The guard and the skill the console installed and uploaded are gone.
	var plugins struct{ Plugins []json.RawMessage }
	if code := apiCall(t, base, "GET", "/v1/plugins", tenantKey, "", &plugins); code != 200 || len(plugins.Plugins) != 0 {
		t.Fatalf("plugins left: %d %s", code, plugins.Plugins)
	}
	var gone struct{ Error struct{ Code string } }
	if code := apiCall(t, base, "GET", "/v1/skills/cms.website.guarded", tenantKey, "", &gone); code != 404 || gone.Error.Code != "skill_not_found" {
		t.Fatalf("the uploaded skill: %d %+v", code, gone)
	}
	var slot struct {
		Current struct {
			Number int
			Digest string
		}
	}
	// Rolled back to generation 1's module (3), then to generation 2's
	// from the history (4).
	sumB := sha256.Sum256(testdata.Bytes(t, "goodv2"))
	if code := apiCall(t, base, "GET", "/admin/v1/slots/Probe", adminKey, "", &slot); code != 200 || slot.Current.Number != 4 ||
		strings.TrimPrefix(slot.Current.Digest, "sha256:") != hex.EncodeToString(sumB[:]) {
		t.Fatalf("slot Probe: %d %+v", code, slot)
	}
	cms, err := mcp.Dial(context.Background(), mcp.Config{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	r, err := cms.CallTool(context.Background(), "admin_stats", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Data struct{ Calls map[string]int } `json:"data"`
	}
	if err := json.Unmarshal(r.Content, &st); err != nil || st.Data.Calls["create_website"] != 1 {
		t.Fatalf("admin_stats: %v: %s", err, r.Content)
	}
	r, err = cms.CallTool(context.Background(), "list_websites", json.RawMessage(`{"spaceId":"sp-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(r.Content), `"shop.example.com"`); n != 1 {
		t.Fatalf("shop.example.com exists %d times: %s", n, r.Content)
	}
}
