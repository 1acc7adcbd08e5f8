package writegate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// benchArgs is about 1 KB of arguments, benchResponse about 2 KB.
var (
	benchArgs     = fmt.Sprintf(`{"spaceId":7,"title":"Q3 report","body":%q}`, strings.Repeat("lorem ipsum ", 82))
	benchResponse = fmt.Sprintf(`{"code":200,"id":"a-1","content":%q}`, strings.Repeat("dolor sit amet ", 134))
)

// BenchmarkWriteGate runs an approved write through both phases, natively
// and as wasm, in one run so the ratio is comparable.
func BenchmarkWriteGate(b *testing.B) {
	approval := approvedFor(digest)
	result := abi.Success("create_article 调用成功", json.RawMessage(benchResponse))
	reqs := map[abi.Phase][]byte{
		abi.PhaseBefore: in{contract: write, bound: benchArgs, approval: approval}.request(),
		abi.PhaseAfter:  in{phase: abi.PhaseAfter, contract: write, bound: benchArgs, approval: approval, result: &result, response: benchResponse}.request(),
	}
	ctx := context.Background()
	for _, phase := range []abi.Phase{abi.PhaseBefore, abi.PhaseAfter} {
		req := reqs[phase]
		b.Run(string(phase)+"/native", func(b *testing.B) {
			n := native(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := n.Call(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(phase)+"/wasm", func(b *testing.B) {
			p := wasmPlugin(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Invoke(ctx, "t", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
