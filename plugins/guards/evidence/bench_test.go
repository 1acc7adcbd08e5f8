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
	benchBoth(b, req)
}

// BenchmarkEvidenceChainCall is the Evidence guard on BenchmarkChain's call
// (internal/chain): 1 KB of arguments, a 2 KB response of 20 records, one
// extract with an entity per record; natively and as wasm.
func BenchmarkEvidenceChainCall(b *testing.B) {
	var filters []string
	for i := 0; len(strings.Join(filters, ",")) < 960; i++ {
		filters = append(filters, fmt.Sprintf(`{"field":"tag_%02d","op":"eq","value":"campaign-spring-%04d"}`, i, i))
	}
	args := `{"spaceId":42,"keywords":"spring launch campaign","filters":[` + strings.Join(filters, ",") + `]}`
	var recs []string
	for i := 0; len(strings.Join(recs, ",")) < 1950; i++ {
		recs = append(recs, fmt.Sprintf(`{"id":%d,"title":"Spring launch article number %d","status":"PUBLISHED","updatedAt":"2026-11-2%dT10:00:00Z"}`, 1000+i, i, i%10))
	}
	resp := `{"code":200,"msg":"ok","data":{"records":[` + strings.Join(recs, ",") + `]}}`
	const c = `{"label":"检索文章","success":{"path":"code","op":"EQ","value":200},"error":{"code":"code","message":"msg"},` +
		`"extracts":[{"key":"articles","path":"data.records","entity":{"type":"article","id":"id","name":"title"}}]}`
	req := in{tool: "search_articles", contract: c, args: args, response: resp, result: ok(resp)}.request()
	benchBoth(b, req)
}

// benchBoth runs the guard on req natively and as wasm, one sub-benchmark
// each.
func benchBoth(b *testing.B, req []byte) {
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
