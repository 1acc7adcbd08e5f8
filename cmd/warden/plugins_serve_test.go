package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins"
)

// TestServePlugins runs warden serve with the first-party plugins as wasm
// from --plugins, watched: a message runs through them, /metrics shows
// them per generation, and a new writegate.wasm renamed into the directory
// becomes WriteGate's next generation while the server runs.
func TestServePlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the first-party plugins and the example MCP server")
	}
	dir := t.TempDir()
	var writegate []byte
	files := map[string]string{}
	for _, p := range plugins.All {
		files[p.File] = "./" + p.Main
	}
	for name, pkg := range files {
		path, err := testdata.Build(pkg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if name == "writegate" {
			writegate = b
		}
		writeFile(t, filepath.Join(dir, name+".wasm"), string(b))
	}
	cms := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	skills, keys, script := serveFixture(t)
	base, _ := startServe(t, []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", cms, "--plugins", dir, "--watch-interval", "50ms",
		"--plugin-cache", testdata.CacheDir(t), "--shutdown-grace", "2s"})
	message := func() {
		t.Helper()
		var sess struct{ ID string }
		if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
			t.Fatalf("session: %d", code)
		}
		var res struct {
			Task struct{ Status, Output string }
		}
		if code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"find space sp-1"}`, &res); code != 200 ||
			res.Task.Status != "DONE" || res.Task.Output != "found Marketing" {
			t.Fatalf("message: %d %+v", code, res)
		}
	}
	metrics := func() string {
		t.Helper()
		resp, err := metricsGet(base)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	message()
	served := regexp.MustCompile(`warden_plugin_calls_total\{generation="1",outcome="pass",plugin="ParamContract"\} [1-9]`)
	if m := metrics(); !served.MatchString(m) || !strings.Contains(m, `warden_plugin_instances_live{generation="1",plugin="WriteGate"}`) {
		t.Fatalf("plugin metrics missing:\n%s", m)
	}

	// A new build of WriteGate (another digest) is written beside and
	// renamed in; the watcher installs it.
	writeFile(t, filepath.Join(dir, "writegate.wasm"), string(append(append([]byte(nil), writegate...), 0, 10, 7, 'w', 'a', 'r', 'd', 'e', 'n', '2', 'v', '2')))
	var slot struct {
		Current struct{ Number int }
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code := apiCall(t, base, "GET", "/admin/v1/slots/WriteGate", adminKey, "", &slot); code == 200 && slot.Current.Number == 2 {
			break
		}
		if time.Now().After(deadline) {
			var raw json.RawMessage
			apiCall(t, base, "GET", "/admin/v1/slots/WriteGate", adminKey, "", &raw)
			t.Fatalf("the watcher did not install the new writegate.wasm: %+v\n%s", slot, raw)
		}
	}
	message()
	// The retired generation is still scraped, with what it served.
	if m := metrics(); !strings.Contains(m, `warden_plugin_instances_live{generation="2",plugin="WriteGate"}`) ||
		!regexp.MustCompile(`warden_plugin_calls_total\{generation="1",outcome="pass",plugin="WriteGate"\} [1-9]`).MatchString(m) {
		t.Fatalf("no generation 2, or no generation 1, in the metrics:\n%s", m)
	}
}
