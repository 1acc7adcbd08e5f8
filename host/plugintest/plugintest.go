package plugintest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// Options configure a conformance run. The zero value runs the kit's own
// checks and probes under the host's default policy.
type Options struct {
	// Name names the module in reports; "" means "plugin".
	Name string
	// SHA256 optionally pins the module's digest, as host.Source does.
	SHA256 string
	// Policy is what the host allows the plugin (limits, pool size, config),
	// as an operator would set it. Zero fields take the host's defaults.
	Policy host.Policy
	// Host configures the host the plugin runs on; set CacheDir to reuse
	// compiled code across runs.
	Host host.Options
	// On, when set, is a running host to check the plugin on instead of a
	// new one made from Host: a service checks a module with the compiled
	// code it serves it with. The check loads its own copy of the plugin,
	// calls it as the host's self-test tenant and closes only that copy.
	On *host.Host
	// Cases are the author's own requests, each with the verdict it must
	// give. The first case of a phase (guards) or tool (builtins) is also
	// the request the kit's probes start from.
	Cases []Case
}

// Case is one request an author expects a verdict for.
type Case struct {
	// Name names the check ("case/<Name>").
	Name string
	// Request is the envelope sent to the plugin. The kit sets ABI and Kind,
	// and fills Config from the policy when it is empty, as the host does.
	Request abi.Request
	// Want is the verdict the plugin must give.
	Want Want
}

// Want is what a case expects. The zero Want accepts any valid result;
// WantPass and WantOutcome build the usual expectations.
type Want struct {
	// Pass requires a guard's pass.
	Pass bool
	// Outcome, when set, requires an observation with this outcome.
	Outcome abi.Outcome
	// Code, when set, requires an observation with this code.
	Code abi.Code
}

// WantPass expects a guard to pass.
func WantPass() Want { return Want{Pass: true} }

// WantOutcome expects an observation with the outcome and, for a
// non-success, the code.
func WantOutcome(o abi.Outcome, code abi.Code) Want { return Want{Outcome: o, Code: code} }

func (w Want) String() string {
	switch {
	case w.Pass:
		return "pass"
	case w.Outcome == 0 && w.Code == "":
		return "any valid result"
	case w.Outcome == 0:
		return "code " + string(w.Code)
	case w.Code == "":
		return w.Outcome.String()
	}
	return w.Outcome.String() + " " + string(w.Code)
}

// Report is the outcome of a conformance run: one Result per check, in the
// order they ran.
type Report struct {
	// Plugin is name@version, or the module's name when it did not load.
	Plugin string `json:"plugin"`
	// Loader is "direct" or "extism"; empty when the plugin did not load.
	Loader string `json:"loader,omitempty"`
	// SHA256 is the module's digest (hex).
	SHA256 string   `json:"sha256"`
	Checks []Result `json:"checks"`
}

// Result is one check: its name, whether it held, and what was seen.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// OK reports whether every check held.
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Failed returns the checks that did not hold.
func (r Report) Failed() []Result {
	var out []Result
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Result returns the check named name.
func (r Report) Result(name string) (Result, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Result{}, false
}

// String lists the checks one a line, ✓ or ✗ with the detail.
func (r Report) String() string {
	var b strings.Builder
	for _, c := range r.Checks {
		mark := "✓"
		if !c.OK {
			mark = "✗"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	return b.String()
}

// Run runs every check against the module wasm and reports each as a
// subtest of t named after the check; a check that does not hold fails its
// subtest with the detail. Run it from the plugin's own go test.
func Run(t *testing.T, wasm []byte, opts Options) {
	t.Helper()
	rep := Check(t.Context(), wasm, opts)
	for _, c := range rep.Checks {
		t.Run(c.Name, func(t *testing.T) {
			if !c.OK {
				t.Errorf("%s: %s", rep.Plugin, c.Detail)
				return
			}
			t.Log(c.Detail)
		})
	}
}
