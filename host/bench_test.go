package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/examples/guards/argcheck"
	"github.com/agentwarden/warden/examples/guards/noop"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// realisticRequest is a before-phase envelope with about 1 KB of arguments
// and a contract of six parameters, the size of a typical write call.
func realisticRequest(tb testing.TB) []byte {
	lines := make([]string, 0, 8)
	for i := 0; i < 8; i++ {
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
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "create_invoice", CallID: "call_1",
		Args: json.RawMessage(args), Contract: json.RawMessage(contract), Schema: json.RawMessage(schema)}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(args); n < 960 || n > 1100 {
		tb.Fatalf("arguments are %d bytes, want about 1 KB", n)
	}
	return b
}

func trivialRequest(tb testing.TB) []byte {
	b, err := json.Marshal(abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "noop", Args: json.RawMessage(`{}`)})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func loadPkg(tb testing.TB, h *host.Host, pkg string, pol host.Policy) *host.Plugin {
	tb.Helper()
	path, err := testdata.Build(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		tb.Fatal(err)
	}
	p, err := h.Load(context.Background(), src, pol)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// warm runs calls until a guest's heap has reached its steady size: a Go
// guest grows its linear memory while its heap first fills up to the
// collector's target, and each growth copies the memory. Benchmarks measure
// the steady state a long-running host sees.
func warm(tb testing.TB, p *host.Plugin, req []byte) {
	tb.Helper()
	for i := 0; i < 8000; i++ {
		if _, err := p.Invoke(context.Background(), "t", req); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkGuardCall measures one guard decision natively (the same Go
// plugin in-process) and through the direct wasm ABI, side by side.
func BenchmarkGuardCall(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	for _, g := range []struct {
		name   string
		plugin guest.Plugin
		pkg    string
		req    []byte
	}{
		{"trivial", noop.Plugin, "./examples/guards/noop/cmd", trivialRequest(b)},
		{"realistic-1KB", argcheck.Plugin, "./examples/guards/argcheck/cmd", realisticRequest(b)},
	} {
		b.Run(g.name+"/native", func(b *testing.B) {
			n, err := guest.NewNative(g.plugin, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if v, err := n.Call(ctx, g.req); err != nil || !v.Pass {
					b.Fatalf("%+v %v", v, err)
				}
			}
		})
		b.Run(g.name+"/direct", func(b *testing.B) {
			p := loadPkg(b, h, g.pkg, host.Policy{})
			defer p.Close(ctx)
			warm(b, p, g.req)
			b.ReportAllocs()
			for b.Loop() {
				if v, err := p.Invoke(ctx, "t", g.req); err != nil || !v.Pass {
					b.Fatalf("%+v %v", v, err)
				}
			}
		})
	}
}

// BenchmarkPoolThroughput runs the realistic guard from parallel callers
// with a pool of 1 and of 2 instances.
func BenchmarkPoolThroughput(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	req := realisticRequest(b)
	for _, size := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", size), func(b *testing.B) {
			p := loadPkg(b, h, "./examples/guards/argcheck/cmd", host.Policy{PoolSize: size})
			defer p.Close(ctx)
			warm(b, p, req)
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if v, err := p.Invoke(ctx, "t", req); err != nil || !v.Pass {
						b.Errorf("%+v %v", v, err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkLoad measures loading (compile + pre-warm) with an empty
// compilation cache and with a warm one on disk, and reports the memory of
// one pre-warmed instance.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	path, err := testdata.Build("./examples/guards/argcheck/cmd")
	if err != nil {
		b.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			dir, err := os.MkdirTemp("", "warden-bench-cache")
			if err != nil {
				b.Fatal(err)
			}
			h, err := host.New(host.Options{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := h.Load(ctx, src, host.Policy{}); err != nil {
				b.Fatal(err)
			}
			_ = h.Close(ctx)
			_ = os.RemoveAll(dir)
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		warm, err := host.New(host.Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := warm.Load(ctx, src, host.Policy{}); err != nil {
			b.Fatal(err)
		}
		_ = warm.Close(ctx)
		var mem int64
		for b.Loop() {
			h, err := host.New(host.Options{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			p, err := h.Load(ctx, src, host.Policy{})
			if err != nil {
				b.Fatal(err)
			}
			mem = p.Stats().InstanceMemoryBytes
			_ = h.Close(ctx)
		}
		b.ReportMetric(float64(mem)/(1<<20), "MiB/instance")
	})
}

// BenchmarkInstanceStart measures a call that starts its instance (one
// call per instance): the linear memory in a reserved mapping, grown in
// place, against wazero's Go slice, grown by copying.
func BenchmarkInstanceStart(b *testing.B) {
	ctx := context.Background()
	h := newHost(b)
	pol := host.Policy{MaxCallsPerInstance: 1}
	for _, mode := range []struct {
		name  string
		slice bool
	}{{"mapped", false}, {"slice", true}} {
		b.Run(mode.name, func(b *testing.B) {
			host.UseSliceMemory(mode.slice)
			defer host.UseSliceMemory(false)
			p := loadPkg(b, h, "./examples/guards/argcheck/cmd", pol)
			defer p.Close(ctx)
			req := before(`{"title":"Spring Launch"}`)
			for b.Loop() {
				if v := p.Guard(ctx, "acme", req); v.Observation != nil && !v.Pass && v.Observation.Code == "" {
					b.Fatalf("%+v", v)
				}
			}
		})
	}
}
