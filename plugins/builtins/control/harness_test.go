package control_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// pair is the plugin and its real wasm build, loaded once on first use.
var pair = testdata.NewPair(control.Plugin, "./plugins/builtins/control/cmd", time.Time{})

// tc is one builtin call and what it must produce.
type tc struct {
	name   string
	tool   string
	args   string
	state  map[abi.Capability]any
	locale abi.Locale

	outcome abi.Outcome
	code    abi.Code
	msg     string
	effects string // JSON array of {kind, payload}; "" = none
	data    string // JSON; "" = none
}

// run calls the builtin natively and through the wasm build, requires the
// same verdict from both, and checks it against the case.
func run(t *testing.T, tt tc) {
	t.Helper()
	pair.CheckBuiltin(t, testdata.Builtin{Tool: tt.tool, Args: tt.args, State: tt.state, Locale: tt.locale,
		Outcome: tt.outcome, Code: tt.code, Message: tt.msg, Effects: tt.effects, Data: tt.data})
}

// TestManifest checks the manifest the host loaded from the wasm build.
func TestManifest(t *testing.T) {
	t.Parallel()
	m := pair.Wasm(t).Manifest()
	want := []string{control.FollowUp, control.Approval, control.Finish, control.Fail, control.Delegate}
	if len(m.Tools) != len(want) {
		t.Fatalf("tools = %d, want %d", len(m.Tools), len(want))
	}
	for i, name := range want {
		if m.Tools[i].Name != name || !json.Valid(m.Tools[i].InputSchema) {
			t.Fatalf("tool %d = %s", i, m.Tools[i].Name)
		}
	}
}
