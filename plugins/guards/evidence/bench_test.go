package evidence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchArgs is about 1 KB of arguments, benchResponse about 2 KB.
var (
	benchArgs     = fmt.Sprintf(`{"q":"cms","note":%q}`, strings.Repeat("lorem ipsum ", 82))
	benchResponse = fmt.Sprintf(`{"code":0,"data":{"records":[{"id":"s1","name":"官网"},{"id":"s2","name":"Docs"}],"total":2},"memo":%q}`, strings.Repeat("dolor sit amet ", 128))
)

// BenchmarkEvidence registers the evidence and entities of a successful
// call, natively and as wasm in one run.
func BenchmarkEvidence(b *testing.B) {
	req := in{contract: search, args: benchArgs, response: benchResponse, result: ok(benchResponse)}.request()
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
