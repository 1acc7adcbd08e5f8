//go:build !wasip1

package argpolicy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/argpolicy"
)

// benchRequest is a before-phase envelope with about 1 KB of arguments that
// pass a realistic schema (every check runs, none fails).
func benchRequest(tb testing.TB) []byte {
	lines := make([]string, 0, 8)
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`{"goodsCode":"G-%04d","name":"Item number %d","qty":%d,"price":%d.50}`, i, i, i+1, 10*i+3))
	}
	args := `{"title":"Quarterly supplier invoice for the north region","buyer":"Acme Trading Co., Ltd.",` +
		`"taxNo":"91310000MA1FL0XXXX","remark":"` + strings.Repeat("deliver before month end; ", 12) + `",` +
		`"lines":[` + strings.Join(lines, ",") + `]}`
	contract := `{"sideEffect":"WRITE","args":{"title":{"sources":["USER"]},"buyer":{"sources":["USER","EVIDENCE"]},` +
		`"taxNo":{"sources":["EVIDENCE"]},"remark":{"required":false},"spaceId":{"from":"shared.spaceId"},"lines[].goodsCode":{"sources":["EVIDENCE"]}}}`
	schema := `{"type":"object","additionalProperties":false,"required":["title","buyer","taxNo","spaceId","lines"],"properties":{` +
		`"title":{"type":"string","minLength":1,"maxLength":200},"buyer":{"type":"string","maxLength":200},` +
		`"taxNo":{"type":"string","pattern":"^[0-9A-Z]{18}$"},"remark":{"type":"string","maxLength":2000},` +
		`"spaceId":{"type":"integer","minimum":1},"currency":{"type":"string","enum":["CNY","USD","EUR"]},` +
		`"lines":{"type":"array","minItems":1,"maxItems":100,"items":{"type":"object","additionalProperties":false,` +
		`"required":["goodsCode","qty","price"],"properties":{"goodsCode":{"type":"string","maxLength":32},` +
		`"name":{"type":"string"},"qty":{"type":"integer","minimum":1},"price":{"type":"number","minimum":0}}}}}}`
	if n := len(args); n < 960 || n > 1100 {
		tb.Fatalf("arguments are %d bytes, want about 1 KB", n)
	}
	b, err := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_invoice", CallID: "call_1",
		Args: json.RawMessage(args), Contract: json.RawMessage(contract), Schema: json.RawMessage(schema)})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkArgPolicy puts the native build beside the wasm build on the
// same 1 KB request; the ratio of the two is what matters.
func BenchmarkArgPolicy(b *testing.B) {
	ctx := context.Background()
	req := benchRequest(b)
	b.Run("native", func(b *testing.B) {
		n, err := guest.NewNative(argpolicy.Plugin, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if v, err := n.Call(ctx, req); err != nil || !v.Pass {
				b.Fatalf("%+v %v", v, err)
			}
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
			if v, err := p.Invoke(ctx, "t", req); err != nil || !v.Pass {
				b.Fatalf("%+v %v", v, err)
			}
		}
	})
}
