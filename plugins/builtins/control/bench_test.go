package control_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// finishRequest is a builtin_node_finish call that passes the whole gate:
// the test skill's contract, a written required output, settled ledger and
// two evidence items, one cited.
func finishRequest(tb testing.TB) *abi.Request {
	tb.Helper()
	n := node(skill, func(n *abi.NodeView) {
		n.Outputs = map[string]abi.OutputValue{"site_id": {Value: json.RawMessage(`"s-9"`), SourceType: "EVIDENCE", SourceRef: "ev1"}}
		n.DoneTools = []string{"create_site"}
	})
	ev := abi.EvidenceView{Items: []abi.EvidenceItem{
		{ID: "ev1", NodeID: "n1", Tool: "create_site", Status: abi.OutcomeSuccess, BusinessOK: true, Payload: json.RawMessage(`{"code":0,"data":{"id":"s-9"}}`)},
		{ID: "ev2", NodeID: "n1", Tool: "list_spaces", Status: abi.OutcomeSuccess, BusinessOK: true, Payload: json.RawMessage(`{"code":0,"data":{"list":[{"id":"sp-1"}]}}`)},
	}}
	state := map[string]json.RawMessage{}
	for k, v := range map[abi.Capability]any{abi.CapStateNode: n, abi.CapStateEvidence: ev, abi.CapStateLedger: abi.LedgerView{}} {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		state[string(k)] = b
	}
	return &abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: "builtin_node_finish",
		Args: json.RawMessage(`{"output":"网站已创建 [ev:ev1]"}`), State: state}
}

// BenchmarkFinish runs one accepted builtin_node_finish natively and as wasm.
func BenchmarkFinish(b *testing.B) {
	ctx := context.Background()
	req := finishRequest(b)
	raw, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("native", func(b *testing.B) {
		n := pair.Native(b)
		b.ReportAllocs()
		for b.Loop() {
			if v, err := n.Call(ctx, raw); err != nil || v.Observation.Outcome != abi.OutcomeSuccess {
				b.Fatalf("%v %+v", err, v.Observation)
			}
		}
	})
	b.Run("wasm", func(b *testing.B) {
		p := pair.Wasm(b)
		b.ReportAllocs()
		for b.Loop() {
			if v := p.Builtin(ctx, "t", req); v.Observation.Outcome != abi.OutcomeSuccess {
				b.Fatalf("%+v", v.Observation)
			}
		}
	})
}
