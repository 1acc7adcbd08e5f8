package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestConfigCompileWorker: the compile worker is on by default, off with
// --native unless a compiled cache is named, and refused when asked for
// without one.
func TestConfigCompileWorker(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // "true", "false" or the error
	}{
		{"default", f.base, nil, "true"},
		{"off", f.with("--compile-worker=false"), nil, "false"},
		{"off by variable", f.base, map[string]string{"WARDEN_COMPILE_WORKER": "false"}, "false"},
		{"native", f.with("--native"), nil, "false"},
		{"native with a cache", f.with("--native", "--plugin-cache", f.dir), nil, "true"},
		{"native, asked for", f.with("--native", "--compile-worker"), nil,
			"--compile-worker (WARDEN_COMPILE_WORKER): needs a compiled cache on disk: --plugin-cache DIR with --native"},
		{"not a bool", f.with("--compile-worker=sometimes"), nil, `--compile-worker (WARDEN_COMPILE_WORKER): flag --compile-worker: "sometimes" is not a bool`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadServeConfig(tc.args, envOf(tc.env), io.Discard)
			got := fmt.Sprint(c.CompileWorker)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestServeCompileWorker runs warden serve, whose compile worker is this
// binary (TestMain), and installs through the admin API a module no host
// has compiled: the worker compiles it, /metrics counts it, and the slot
// serves it.
func TestServeCompileWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a Go guest")
	}
	t.Parallel()
	cms := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	skills, keys, script := serveFixture(t)
	base, _ := startServe(t, []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", cms, "--native",
		"--plugin-cache", filepath.Join(t.TempDir(), "compiled"), "--shutdown-grace", "2s"})
	// A new digest every run: the cache directory is new, but the
	// rewrite and compile of a known digest are memoized in-process.
	mod := append(testdata.Bytes(t, "good"), 0, 21, 11, 'w', 'a', 'r', 'd', 'e', 'n', '.', 't', 'e', 's', 't')
	mod = append(mod, fmt.Sprintf("%09d", time.Now().UnixNano()%1e9)...)
	var slot struct {
		Current struct {
			Number int
			Digest string
		}
	}
	req, err := http.NewRequest("PUT", base+"/admin/v1/slots/Good?sha256="+host.Digest(mod), bytes.NewReader(mod))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/wasm")
	put, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer put.Body.Close()
	body, _ := io.ReadAll(put.Body)
	if err := json.Unmarshal(body, &slot); err != nil || put.StatusCode != 201 || slot.Current.Number != 1 || slot.Current.Digest != host.Digest(mod) {
		t.Fatalf("install: %d %s", put.StatusCode, body)
	}
	resp, err := metricsGet(base)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`warden_plugin_compile_worker_runs_total{result="compiled"} 1`, `warden_plugin_compile_worker_runs_total{result="failed"} 0`,
		"warden_plugin_compile_worker_fallbacks_total 0"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(b) {
			t.Errorf("metrics lack %s:\n%s", want, b)
		}
	}
}
