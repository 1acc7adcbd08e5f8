package scenario_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/testdata"
)

// options runs the first-party plugins in-process, or as wasm built into
// the tests' shared cache.
func options(t *testing.T, native bool) scenario.Options {
	t.Helper()
	if native {
		return scenario.Options{Native: true}
	}
	cache := testdata.CacheDir(t)
	set, err := firstparty.Load(context.Background(), firstparty.Options{CacheDir: filepath.Join(cache, "plugins")})
	if err != nil {
		t.Fatal(err)
	}
	return scenario.Options{Plugins: set, CacheDir: filepath.Join(cache, "compiled")}
}

// TestScenarioFiles runs every scenario file under examples/scenarios, so
// `go test ./...` (and `make test`) runs them all, with the plugins as wasm
// (the default) and in-process. A pending scenario is skipped with its
// reason.
func TestScenarioFiles(t *testing.T) {
	t.Parallel()
	for _, native := range []bool{false, true} {
		t.Run(map[bool]string{false: "wasm", true: "native"}[native], func(t *testing.T) {
			t.Parallel()
			scenarioFiles(t, options(t, native))
		})
	}
}

func scenarioFiles(t *testing.T, o scenario.Options) {
	files, err := filepath.Glob("../../examples/scenarios/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("only %d scenario files", len(files))
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := scenario.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if s.Tools.MCP != nil && testing.Short() {
				t.Skip("starts an MCP server")
			}
			rep, err := scenario.Run(context.Background(), s, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Skipped() {
				t.Skip("pending: " + rep.Pending)
			}
			if !rep.Passed() {
				var b strings.Builder
				for _, e := range rep.Events {
					b.WriteString(scenario.FormatEvent(e) + "\n")
				}
				t.Fatalf("%s\ntrace:\n%s", strings.Join(rep.Mismatches, "\n"), b.String())
			}
		})
	}
}
