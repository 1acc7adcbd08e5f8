package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// firstParty are the first-party plugins' packages.
var firstParty = []string{
	"./plugins/guards/argpolicy/cmd", "./plugins/guards/argbinding/cmd", "./plugins/guards/paramcontract/cmd",
	"./plugins/guards/fingerprint/cmd", "./plugins/guards/writegate/cmd", "./plugins/guards/responsecontract/cmd",
	"./plugins/guards/evidence/cmd", "./plugins/builtins/control/cmd", "./plugins/builtins/node/cmd", "./plugins/builtins/env/cmd",
}

// BenchmarkInstanceFootprint measures, per first-party plugin, what one
// tenant's instance costs: the Go heap it holds (heap-B/inst, wazero's
// per-instance tables, the sandbox and call state), its linear memory
// after one call (linear-B/inst), and the added latency of a tenant's
// first call: with no spare ready, the call starts its instance
// (cold-ms); with the spare ready, it takes it (spare-ms); warm-ms is a
// call on the tenant's pooled instance. One iteration is one new tenant.
func BenchmarkInstanceFootprint(b *testing.B) {
	for _, pkg := range firstParty {
		name := pkg[len("./plugins/") : len(pkg)-len("/cmd")]
		b.Run(name, func(b *testing.B) {
			h := newHost(b)
			path, err := testdata.Build(pkg)
			if err != nil {
				b.Fatal(err)
			}
			src, err := host.ReadSource(path, "")
			if err != nil {
				b.Fatal(err)
			}
			info, err := host.Inspect(context.Background(), src)
			if err != nil {
				b.Fatal(err)
			}
			p, err := h.Load(context.Background(), src, host.Policy{Limits: abi.Limits{TimeoutMs: 30000},
				Capabilities: info.Manifest.Capabilities, Config: json.RawMessage(`{}`)})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			kind, tool := "guard", "t"
			if m := p.Manifest(); m.Role == abi.RoleBuiltin && len(m.Tools) > 0 {
				kind, tool = "builtin", m.Tools[0].Name
			}
			req := []byte(fmt.Sprintf(`{"abi":1,"kind":%q,"phase":"before","tool":%q,"args":{}}`, kind, tool))
			ctx := context.Background()
			call := func(tenant string) time.Duration {
				start := time.Now()
				_, _ = p.Invoke(ctx, tenant, req)
				return time.Since(start)
			}
			// One tenant first, so that the heap measured below holds
			// instances only.
			call("warm-up")
			host.WaitSpares(p)
			host.RefillSpares(false)
			defer host.RefillSpares(true)
			host.DropSpare(p)
			var cold, warm, spare time.Duration
			heap0 := heapInUse()
			live0 := p.Stats().InstancesLive
			b.ResetTimer()
			for i := range b.N {
				tenant := fmt.Sprintf("t%d", i)
				cold += call(tenant)
				warm += call(tenant)
			}
			b.StopTimer()
			heap1 := heapInUse()
			st := p.Stats()
			n := st.InstancesLive - live0
			if n <= 0 {
				b.Fatalf("no instance kept (%+v)", st)
			}
			for i := range b.N {
				host.RefillSpares(true)
				_ = call(fmt.Sprintf("spare-warm%d", i))
				host.WaitSpares(p)
				host.RefillSpares(false)
				spare += call(fmt.Sprintf("s%d", i))
			}
			b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/inst")
			b.ReportMetric(float64(st.InstancesMemoryBytes)/float64(st.InstancesLive), "linear-B/inst")
			b.ReportMetric(float64(cold.Microseconds())/1000/float64(b.N), "cold-ms")
			b.ReportMetric(float64(spare.Microseconds())/1000/float64(b.N), "spare-ms")
			b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "warm-ms")
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
