package fingerprint_test

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
	benchArgs     = fmt.Sprintf(`{"q":"cms","note":%q}`, strings.Repeat("lorem ipsum ", 82))
	benchResponse = fmt.Sprintf(`{"total":1,"memo":%q}`, strings.Repeat("dolor sit amet ", 134))
)

// BenchmarkFingerprint runs both phases with two earlier records, natively
// and as wasm in one run.
func BenchmarkFingerprint(b *testing.B) {
	result := abi.Success("调用成功", json.RawMessage(benchResponse))
	view := abi.FingerprintView{StateDigest: "s1", Recent: times(2, same)}
	reqs := map[abi.Phase][]byte{
		abi.PhaseBefore: in{view: view}.request(),
		abi.PhaseAfter:  in{phase: abi.PhaseAfter, view: view, result: &result, response: benchResponse}.request(),
	}
	ctx := context.Background()
	for _, phase := range []abi.Phase{abi.PhaseBefore, abi.PhaseAfter} {
		req := []byte(strings.ReplaceAll(string(reqs[phase]), `{"q":"cms","page":1}`, benchArgs))
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
