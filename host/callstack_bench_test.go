package host_test

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// BenchmarkCallStackBound measures the guard calls of BenchmarkGuardCall
// with and without the call-stack instrumentation (a counted wrapper per
// defined function).
func BenchmarkCallStackBound(b *testing.B) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		name := "unbounded"
		if on {
			name = "bounded"
		}
		host.BoundCallStack(on)
		h := newHostNoCache(b)
		for _, g := range []struct {
			name string
			pkg  string
			req  []byte
		}{
			{"trivial", "./examples/guards/noop/cmd", trivialRequest(b)},
			{"realistic-1KB", "./examples/guards/argcheck/cmd", realisticRequest(b)},
		} {
			p := loadPkg(b, h, g.pkg, host.Policy{})
			warm(b, p, g.req)
			b.Run(g.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if v, err := p.Invoke(ctx, "t", g.req); err != nil || !v.Pass {
						b.Fatalf("%+v %v", v, err)
					}
				}
			})
			_ = p.Close(ctx)
		}
	}
	host.BoundCallStack(true)
}

func newHostNoCache(t testing.TB) *host.Host {
	t.Helper()
	h, err := host.New(host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// BenchmarkInstrument instruments a Go guest (about 3.5 MiB of wasm), as
// the first load of a module does before it compiles (metering, then the
// call-stack bound; a reload finds the result in the memo).
func BenchmarkInstrument(b *testing.B) {
	bin := testdata.Bytes(b, "good")
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		if _, err := host.RewriteModule(bin); err != nil {
			b.Fatal(err)
		}
	}
}
