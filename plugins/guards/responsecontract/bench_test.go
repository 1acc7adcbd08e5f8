package responsecontract_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchArgs is about 1 KB of arguments, benchResponse about 2 KB.
var (
	benchArgs     = fmt.Sprintf(`{"invoice":"INV-1","note":%q}`, strings.Repeat("lorem ipsum ", 82))
	benchResponse = fmt.Sprintf(`{"code":"0","data":{"id":5,"memo":%q}}`, strings.Repeat("dolor sit amet ", 134))
)

// BenchmarkResponseContract judges a successful 2 KB response and checks
// it against an output schema, natively and as wasm in one run.
func BenchmarkResponseContract(b *testing.B) {
	r := in{contract: withError, response: benchResponse, schema: outSchema}
	req := r.request()
	req = []byte(strings.Replace(string(req), `{"invoice":"INV-1"}`, benchArgs, 1))
	ctx := context.Background()
	b.Run("native", func(b *testing.B) {
		n := native(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := n.Call(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wasm", func(b *testing.B) {
		p := wasmPlugin(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Invoke(ctx, "t", req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
