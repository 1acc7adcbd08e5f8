package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testdata"
)

// TestPluginCapabilities: inspect prints the capabilities a module asks
// for and the codes it declares; test --capabilities checks the module
// against an allow-list and fails naming what it asks for beyond it.
func TestPluginCapabilities(t *testing.T) {
	t.Parallel()
	escalate := testdata.Wasm(t, "writegate-escalate")
	code, out, stderr := runPlugin(t, "inspect", escalate)
	if code != 0 || stderr != "" {
		t.Fatalf("inspect: exit %d, stderr %q", code, stderr)
	}
	if m := missingLines(out,
		"capabilities  state.ledger, state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random",
	); len(m) > 0 {
		t.Fatalf("inspect: missing lines %q in\n%s", m, out)
	}
	code, out, _ = runPlugin(t, "inspect", testdata.Wasm(t, "declaredcode"))
	if m := missingLines(out,
		"capabilities  none",
		"code          domainguard:DOMAIN_BLOCKED (REJECTED): domain {domain} is not allowed; next: use a domain under example.com",
	); code != 0 || len(m) > 0 {
		t.Fatalf("inspect declaredcode: exit %d, missing lines %q in\n%s", code, m, out)
	}

	tests := []struct {
		name string
		caps string
		exit int
		line string
	}{
		{"WriteGate's allow-list", "state.ledger, state.approval,effect.ledger", 1,
			"✗ load: host: load " + escalate + ": plugin asks for capabilities it is not granted: writegate@1.2.0 asks for state.ledger, " +
				"state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random; it may have state.ledger, " +
				"state.approval, effect.ledger (not granted: effect.node, effect.output, state.conversation, clock, random)"},
		{"an empty allow-list", "", 1,
			"✗ load: host: load " + escalate + ": plugin asks for capabilities it is not granted: writegate@1.2.0 asks for state.ledger, " +
				"state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random; it may have none " +
				"(not granted: state.ledger, state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random)"},
	}
	for _, tt := range tests {
		code, out, _ := runPlugin(t, "test", "--capabilities", tt.caps, escalate)
		if code != tt.exit || len(missingLines(out, tt.line)) > 0 {
			t.Errorf("%s: exit %d, want %d with line\n%s\nin\n%s", tt.name, code, tt.exit, tt.line, out)
		}
	}
	code, out, _ = runPlugin(t, "test", "--capabilities",
		"state.ledger,state.approval,effect.ledger,effect.node,effect.output,state.conversation,clock,random", escalate)
	if !strings.Contains(out, "✓ load: writegate@1.2.0 via the direct loader") {
		t.Errorf("granted all it asks for: exit %d\n%s", code, out)
	}
	code, _, stderr = runPlugin(t, "test", "--capabilities", "state.ledger,network", escalate)
	if code != 2 || !strings.Contains(stderr, `invalid value "state.ledger,network" for flag -capabilities: unknown capability "network"`) {
		t.Errorf("unknown capability: exit %d, stderr %q", code, stderr)
	}
}

// TestClientPluginsCapabilities: `warden slots install` of a WriteGate
// asking for more than WriteGate's capabilities is refused, and the error
// names the instance that refused it, what it asked for and what the slot
// allows.
func TestClientPluginsCapabilities(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t, approvalFile, 0)
	vars := map[string]string{"escalate": testdata.Wasm(t, "writegate-escalate")}
	runSteps(t, f, vars, []clientStep{
		{"an escalating WriteGate", clientAdmin, []string{"slots", "install", "WriteGate", "{escalate}"}, 1, "",
			"warden: capability_not_granted: WriteGate@1 refused by local: writegate@1.2.0 asks for capabilities the slot does not allow: it asks for state.ledger, " +
				"state.approval, effect.ledger, effect.node, effect.output, state.conversation, clock, random; the slot allows " +
				"state.ledger, state.approval, effect.ledger (not allowed: effect.node, effect.output, state.conversation, clock, random); " +
				"no instance serves it, the desired generation stays\n"},
		{"no slot was made", clientAdmin, []string{"slots", "show", "WriteGate"}, 1, "", "warden: slot_not_found: no slot WriteGate\n"},
	})
}

// TestRunPluginsGrant: `warden run --plugins DIR` grants each module its
// first-party plugin's capabilities: a WriteGate asking for more is refused
// before any scenario runs.
func TestRunPluginsGrant(t *testing.T) {
	t.Parallel()
	set := testSet(t)
	dir := t.TempDir()
	for _, s := range traceSlots {
		writeFile(t, filepath.Join(dir, s.file+".wasm"), string(set.Modules[s.file]))
	}
	writeFile(t, filepath.Join(dir, "writegate.wasm"), string(testdata.Bytes(t, "writegate-escalate")))
	code, out, errs := runRun(t, "--plugins", dir, acceptance+"09-query-then-finish.yaml")
	const want = "warden run: scenario: guard WriteGate: host: slot WriteGate: candidate: host: load writegate.wasm: " +
		"plugin asks for capabilities it is not granted: writegate@1.2.0 asks for state.ledger, state.approval, effect.ledger, " +
		"effect.node, effect.output, state.conversation, clock, random; it may have state.ledger, state.approval, effect.ledger " +
		"(not granted: effect.node, effect.output, state.conversation, clock, random)\n"
	if code != 2 || out != "" || errs != want {
		t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out, errs, want)
	}
}
