//go:build !wasip1

package paramcontract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
)

// benchRequest is a before-phase envelope with about 1 KB of bound
// arguments whose six contract parameters all pass: USER, EVIDENCE
// (this node and upstream), a bound SHARED value and an array of EVIDENCE
// items, so every matcher runs.
func benchRequest(tb testing.TB) []byte {
	lines := make([]string, 0, 8)
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`{"tagId":"t%d","name":"Item number %d","qty":%d,"price":%d.50}`, i%2+1, i, i+1, 10*i+3))
	}
	args := `{"title":"Q3季度报告","buyer":"Acme Trading","taxNo":"91310000MA1FL0XXXX","spaceId":"S2",` +
		`"remark":"` + strings.Repeat("deliver before month end; ", 15) + `","lines":[` + strings.Join(lines, ",") + `]}`
	if n := len(args); n < 960 || n > 1100 {
		tb.Fatalf("arguments are %d bytes, want about 1 KB", n)
	}
	contract := `{"args":{"title":{"sources":["USER"]},"buyer":{"sources":["USER","EVIDENCE"]},"taxNo":{"sources":["EVIDENCE"]},` +
		`"remark":{"required":false,"sources":["MODEL"]},"spaceId":{"from":"shared.spaceId"},"lines[].tagId":{"sources":["EVIDENCE"]}}}`
	b, err := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_invoice", CallID: "call_1",
		Args: json.RawMessage(args), Bound: json.RawMessage(args), Provenance: map[string]string{"spaceId": "SHARED"},
		Contract: json.RawMessage(contract),
		State: map[string]json.RawMessage{
			string(abi.CapStateNode): json.RawMessage(node), string(abi.CapStateEntities): json.RawMessage(entities),
			string(abi.CapStateEvidence): json.RawMessage(evidence), string(abi.CapStateConversation): json.RawMessage(conversation),
			string(abi.CapStateFollowUp): json.RawMessage(followup),
		}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParamContract puts the native build beside the wasm build on the
// same 1 KB request; the ratio of the two is what matters.
func BenchmarkParamContract(b *testing.B) {
	ctx := context.Background()
	req := benchRequest(b)
	check := func(v abi.Verdict, err error) {
		if err != nil || !v.Pass || len(v.Facts) != 5 {
			b.Fatalf("pass %v, %d facts, %+v, %v", v.Pass, len(v.Facts), v.Observation, err)
		}
	}
	b.Run("native", func(b *testing.B) {
		n, err := guest.NewNative(paramcontract.Plugin, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			check(n.Call(ctx, req))
		}
	})
	b.Run("wasm", func(b *testing.B) {
		p := pair.Wasm(b)
		for range 2000 { // reach the guest heap's steady size first
			if _, err := p.Invoke(ctx, "t", req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			check(p.Invoke(ctx, "t", req))
		}
	})
}
