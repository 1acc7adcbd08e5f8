//go:build !wasip1

package argbinding_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/argbinding"
)

// benchRequest is a before-phase envelope with about 1 KB of arguments, a
// contract that binds a shared value, a constant and an array template,
// and the state views of a node with upstream evidence.
func benchRequest(tb testing.TB) []byte {
	lines := make([]string, 0, 8)
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`{"name":"Item number %d","qty":%d,"price":%d.50,"note":"handle with care"}`, i, i+1, 10*i+3))
	}
	args := `{"title":"Quarterly supplier invoice for the north region","buyer":"Acme Trading Co., Ltd.",` +
		`"taxNo":"91310000MA1FL0XXXX","remark":"` + strings.Repeat("deliver before month end; ", 10) + `",` +
		`"lines":[` + strings.Join(lines, ",") + `]}`
	if n := len(args); n < 960 || n > 1100 {
		tb.Fatalf("arguments are %d bytes, want about 1 KB", n)
	}
	contract := `{"sideEffect":"WRITE","success":{"path":"code","op":"EQ","value":0},"args":{"title":{"sources":["USER"]},"spaceId":{"from":"shared.spaceId"},` +
		`"currency":{"const":"CNY"},"lines[].goodsCode":{"from":"shared.cart[].code"},"tagId":{"from":"evidence.tag_list.0.id"}}}`
	b, err := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_invoice", CallID: "call_1",
		Args: json.RawMessage(args), Contract: json.RawMessage(contract),
		State: map[string]json.RawMessage{
			string(abi.CapStateNode): json.RawMessage(node), string(abi.CapStateEntities): json.RawMessage(entities),
			string(abi.CapStateEvidence): json.RawMessage(evidence),
		}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkArgBinding puts the native build beside the wasm build on the
// same 1 KB request; the ratio of the two is what matters.
func BenchmarkArgBinding(b *testing.B) {
	ctx := context.Background()
	req := benchRequest(b)
	check := func(v abi.Verdict, err error) {
		if err != nil || !v.Pass || len(v.Facts) != 6 {
			b.Fatalf("pass %v, %d facts, %v", v.Pass, len(v.Facts), err)
		}
	}
	b.Run("native", func(b *testing.B) {
		n, err := guest.NewNative(argbinding.Plugin, 1<<20)
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
