package loop_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/examples/builtins/unitconv"
	"github.com/agentwarden/warden/loop"
)

// TestThirdPartyBuiltinOffered checks that a third-party builtin among the
// tenant's builtins is offered to the node with its declared input schema
// and called as a builtin (not in toolNames), and that TOOL events name
// what decided them.
func TestThirdPartyBuiltinOffered(t *testing.T) {
	t.Parallel()
	turns := append(gatedTurns[:1:1], turn(call(unitconv.ToolConvert, `{"value":10,"from":"km","to":"mi"}`)), gatedTurns[1], gatedTurns[2])
	h := newHarness(t, setup{turns: turns, answers: map[string][]answer{"query_space": {{body: spaces}}},
		builtins: append(nativeBuiltins(), loop.NativeBuiltin(unitconv.Plugin))})
	_, err := h.runner.Run(ctx, "n1")
	must(t, err)
	h.wantTools(
		"query_space SUCCESS stalls=0",
		"unitconv_convert SUCCESS stalls=0",
		"create_site DEFERRED APPROVAL_REQUIRED stalls=0",
		"builtin_node_approval SUCCESS stalls=0",
	)
	var schema json.RawMessage
	for _, tl := range h.model.reqs[0].Tools {
		if tl.Name == unitconv.ToolConvert {
			schema = tl.Parameters
		}
	}
	want := unitconv.Plugin.Manifest.Tools[0].InputSchema
	var a, b bytes.Buffer
	_ = json.Compact(&a, schema)
	_ = json.Compact(&b, want)
	if a.Len() == 0 || a.String() != b.String() {
		t.Fatalf("offered schema %s, want %s", schema, want)
	}
	if e := h.event(loop.KindTool, unitconv.ToolConvert); e.Plugin != "acme.unitconv@1.2.0" || e.Guard != "" {
		t.Fatalf("builtin event names %q %q", e.Guard, e.Plugin)
	}
	if e := h.event(loop.KindTool, "create_site"); e.Guard != "WriteGate" || e.Plugin != "writegate@1.0.0" {
		t.Fatalf("gated write names %q %q", e.Guard, e.Plugin)
	}
	if e := h.event(loop.KindTool, "query_space"); e.Guard != "" || e.Plugin != "" {
		t.Fatalf("the tool's own result names %q %q", e.Guard, e.Plugin)
	}
}
