package scenario_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/loop/scenario"
)

// TestScenarioFiles runs every scenario file under examples/scenarios, so
// `go test ./...` (and `make test`) runs them all. A pending scenario is
// skipped with its reason.
func TestScenarioFiles(t *testing.T) {
	t.Parallel()
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
			rep, err := scenario.Run(context.Background(), s, scenario.Options{})
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
