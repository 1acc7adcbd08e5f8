package conformance_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conformance"
)

// The suite and the Node it needs, from the npm registry, pinned. CI installs
// them ahead of the tests (see .ci/run) with:
//
//	npm install --no-save --no-audit --no-fund \
//	  --prefix "$HOME/.cache/warden/npm/conformance@0.1.16" @modelcontextprotocol/conformance@0.1.16
//	npm install --no-save --no-audit --no-fund \
//	  --prefix "$HOME/.cache/warden/npm/node@22.23.3" node@22.23.3
//
// WARDEN_NPM_CACHE overrides $HOME/.cache/warden/npm. Without them the test
// installs them when npm is there, and skips otherwise, except under CI=true,
// where a missing suite is a failure.
const (
	suitePkg     = "@modelcontextprotocol/conformance"
	suiteVersion = "0.1.16"
	nodeVersion  = "22.23.3"
)

// missing skips the test, or fails it under CI.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}

// npmPackage returns path inside the prefix where pkg@version is installed,
// installing it when it is not there.
func npmPackage(t *testing.T, dir, pkg, version, path string) string {
	t.Helper()
	root := os.Getenv("WARDEN_NPM_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			missing(t, "no home directory for the npm cache: %v", err)
		}
		root = filepath.Join(home, ".cache", "warden", "npm")
	}
	prefix := filepath.Join(root, dir+"@"+version)
	file := filepath.Join(prefix, "node_modules", path)
	if _, err := os.Stat(file); err == nil {
		return file
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing(t, "npm is not installed, so %s@%s cannot be fetched", pkg, version)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, pkg+"@"+version).CombinedOutput()
	if err != nil {
		missing(t, "npm could not install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("npm installed %s@%s but %s is missing", pkg, version, file)
	}
	return file
}

// suite is how to run the conformance CLI: Node 22 and the CLI's script.
type suite struct{ node, cli string }

func (s suite) cmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, s.node, append([]string{s.cli}, args...)...)
}

func installSuite(t *testing.T) suite {
	t.Helper()
	return suite{
		node: npmPackage(t, "node", "node", nodeVersion, filepath.Join(".bin", "node")),
		cli:  npmPackage(t, "conformance", suitePkg, suiteVersion, filepath.Join("@modelcontextprotocol", "conformance", "dist", "index.js")),
	}
}

// buildDriver builds cmd/mcp-conformance-client into a temporary directory.
func buildDriver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/mcp-conformance-client").CombinedOutput(); err != nil {
		t.Fatalf("build the driver: %v\n%s", err, out)
	}
	return bin
}

// clientScenarios are every client scenario of the suite that is not an
// OAuth flow (auth/*: tools/mcp is given a token, it never fetches one; the
// bearer token is proved in TestBearerToken), each with the checks it must
// pass (INFO checks left out). Every scenario must pass, and the suite exit
// 0; a check that fails or warns fails the test.
var clientScenarios = []struct {
	name   string
	checks []string
}{
	{"initialize", []string{"mcp-client-initialization"}},
	{"tools_call", []string{"tool-add-numbers"}},
	// The server asks elicitation/create on the standalone GET stream;
	// the driver's handler accepts, and the SDK fills in the defaults.
	{"elicitation-sep1034-client-defaults", []string{
		"client-elicitation-sep1034-string-default", "client-elicitation-sep1034-integer-default",
		"client-elicitation-sep1034-number-default", "client-elicitation-sep1034-enum-default",
		"client-elicitation-sep1034-boolean-default",
	}},
	// The server closes the tools/call stream after a priming event; the
	// client resumes it with GET and Last-Event-ID after the retry delay.
	{"sse-retry", []string{"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"}},
}

// TestSuiteLists: the suite's client scenarios, auth/* aside, are exactly
// the ones this package drives and the table above grades.
func TestSuiteLists(t *testing.T) {
	s := installSuite(t)
	out, err := s.cmd(t.Context(), "list", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+)`).FindAllStringSubmatch(string(out), -1) {
		if !strings.HasPrefix(m[1], "auth/") {
			got = append(got, m[1])
		}
	}
	var want []string
	for _, sc := range clientScenarios {
		want = append(want, sc.name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the suite's client scenarios (auth/* aside) are %v, the table grades %v:\n%s", got, want, out)
	}
	if drv := conformance.Scenarios(); !slices.Equal(drv, want) {
		t.Fatalf("the driver knows %v, the table grades %v", drv, want)
	}
}

// TestClientScenarios runs each scenario of the suite with the driver and
// requires exactly the verdicts of the table.
func TestClientScenarios(t *testing.T) {
	s := installSuite(t)
	bin := buildDriver(t)
	for _, sc := range clientScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			// The driver gives up well before the runner's 30 s, so a
			// scenario that waits on a missing feature ends quickly.
			cmd := s.cmd(ctx, "client", "--command", bin+" -timeout 8s", "--scenario", sc.name, "--timeout", "20000", "-o", out)
			log, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("suite: %v", err)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("want one checks.json under %s, found %v\n%s", out, files, log)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var checks []struct{ ID, Status, ErrorMessage string }
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatalf("checks.json: %v", err)
			}
			got := map[string]string{}
			for _, c := range checks {
				if c.Status != "INFO" {
					got[c.ID] = c.Status + " " + c.ErrorMessage
				}
			}
			want := map[string]string{}
			for _, id := range sc.checks {
				want[id] = "SUCCESS "
			}
			if !maps.Equal(got, want) {
				t.Fatalf("checks %q\nwant %q\n%s", got, want, log)
			}
		})
	}
}
