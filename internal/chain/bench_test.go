package chain_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins"
)

// -guestprofile FILE writes a pprof profile of the wasm guests' functions
// over BenchmarkChain's wasm loop (host.GuestProfile; make profile). The
// listener inflates the run's times: take the figures from a run without it.
var guestProfilePath = flag.String("guestprofile", "", "write a pprof profile of the wasm guests' functions to this file")

// guestProfile is the profile the wasm guards' host records into, when
// -guestprofile asks for one.
var guestProfile *host.GuestProfile

// The benchmark call: a read with 1 KB of arguments and a 2 KB result,
// through all seven first-party guards (before and after).
const benchSkill = `{"tools":{"search_articles":{
  "label":"检索文章",
  "args":{"spaceId":{"sources":["EVIDENCE","MODEL"]},"keywords":{"sources":["USER","MODEL"]},"filters":{"required":false,"sources":["MODEL"]}},
  "success":{"path":"code","op":"EQ","value":200},
  "error":{"code":"code","message":"msg"},
  "extracts":[{"key":"articles","path":"data.records","entity":{"type":"article","id":"id","name":"title"}}]
}}}`

const benchSchema = `{"type":"object","additionalProperties":false,"required":["spaceId","keywords"],"properties":{
  "spaceId":{"type":"integer","minimum":1},"keywords":{"type":"string","maxLength":200},
  "filters":{"type":"array","maxItems":20,"items":{"type":"object","additionalProperties":false,"required":["field","op","value"],
    "properties":{"field":{"type":"string"},"op":{"type":"string","enum":["eq","ne","gt","lt","in"]},"value":{"type":"string"}}}}}}`

func benchCall(tb testing.TB) (chain.Call, chain.Caller) {
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
	if len(args) < 1000 || len(args) > 1100 || len(resp) < 2000 || len(resp) > 2200 {
		tb.Fatalf("arguments %d bytes, response %d bytes", len(args), len(resp))
	}
	c, _, err := contract.Parse("articles", []byte(benchSkill))
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]map[string]json.RawMessage
	_ = json.Unmarshal([]byte(benchSkill), &m)
	call := chain.Call{Tenant: "acme", CallID: "call_b", Tool: "search_articles", Args: []byte(args),
		Contract: m["tools"]["search_articles"], ToolContract: c.Tools["search_articles"], Schema: json.RawMessage(benchSchema)}
	call.State = views(func(v map[abi.Capability]any) {
		v[abi.CapStateNode] = abi.NodeView{SessionID: "s1", TaskID: "t1", NodeID: "n1", Status: "RUNNING", SkillKey: "articles",
			Contract: json.RawMessage(benchSkill), ToolNames: []string{"search_articles"}}
	})
	// The response's bytes are made once: a tool's own, not the chain's.
	body := json.RawMessage(resp)
	return call, script{"search_articles": func(json.RawMessage) (chain.Response, error) { return chain.Response{Content: body}, nil }}
}

// BenchmarkChain runs the whole first-party chain natively and as wasm, in
// one run: the median latency beside the mean and the allocations of one
// caller, calls/s with four callers (two per core on two cores), and at the
// end the mean time of each guard, native beside wasm.
func BenchmarkChain(b *testing.B) {
	if *guestProfilePath != "" {
		guestProfile = host.NewGuestProfile()
		defer func() { guestProfile = nil }()
	}
	call, tool := benchCall(b)
	split := map[bool]map[string]*guardTime{}
	p50 := map[bool]time.Duration{}
	var order []string
	for _, wasm := range []bool{false, true} {
		name := "native"
		if wasm {
			name = "wasm"
		}
		// The chain is built and warmed on first use, so that a -bench
		// filter naming one side does not pay for the other.
		var c *chain.Chain
		parent := b // the guards' hosts live as long as both sub-benchmarks
		setup := func(b *testing.B) {
			if c != nil {
				return
			}
			var err error
			if c, err = chain.New(guards(parent, wasm), nil, &chain.Invoker{Caller: tool}); err != nil {
				b.Fatal(err)
			}
			check := c.Run(context.Background(), call)
			if check.Observation.Outcome != abi.OutcomeSuccess || !check.Invoked {
				b.Fatalf("%s: %v %s %s\n%+v", name, check.Observation.Outcome, check.Observation.Code, check.Observation.Message(), check.Trace)
			}
			order = order[:0]
			for _, st := range check.Trace {
				order = append(order, stepName(st))
			}
			warm := 2000
			if wasm && guestProfile != nil {
				warm = 300 // every guest call is timed: a shorter warm-up
			}
			for i := 0; i < warm; i++ { // steady state: guest heaps warmed
				c.Run(context.Background(), call)
			}
			if wasm && guestProfile != nil {
				guestProfile.Reset() // the warm-up is not measured
			}
		}
		b.Run(name, func(b *testing.B) {
			// A CPU profile splits by -tagfocus=chain=native|wasm.
			pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("chain", name)))
			lat := make([]time.Duration, 0, 1<<16)
			rest := make([]time.Duration, 0, 1<<16) // each call's time less its Evidence step
			per := map[string]*guardTime{}
			setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				res := c.Run(context.Background(), call)
				lat = append(lat, time.Since(start))
				rest = append(rest, lat[len(lat)-1])
				for _, st := range res.Trace {
					if st.Guard == "Evidence" {
						rest[len(rest)-1] -= st.Duration
					}
					gt := per[stepName(st)]
					if gt == nil {
						gt = &guardTime{}
						per[stepName(st)] = gt
					}
					gt.total += st.Duration
					gt.n++
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			p50[wasm] = lat[len(lat)/2]
			split[wasm] = per
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
			b.ReportMetric(float64(rest[len(rest)/2].Microseconds()), "p50-µs-less-Evidence")
			if wasm && guestProfile != nil {
				writeGuestProfile(b, b.N)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("chain", name)))
			setup(b)
			b.SetParallelism(2) // 2 × GOMAXPROCS callers
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.Run(context.Background(), call)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
	var out strings.Builder
	if split[false] == nil || split[true] == nil { // a -bench filter ran one side only
		for wasm, per := range split {
			fmt.Fprintf(&out, "%-26s %10s\n", "mean per guard", map[bool]string{false: "native", true: "wasm"}[wasm])
			for _, g := range order {
				fmt.Fprintf(&out, "%-26s %8.1fµs\n", g, us(per[g].mean()))
			}
		}
		fmt.Print(out.String())
		return
	}
	fmt.Fprintf(&out, "median per call: native %v, wasm %v (%.1fx)\n", p50[false].Round(time.Microsecond),
		p50[true].Round(time.Microsecond), float64(p50[true])/float64(p50[false]))
	fmt.Fprintf(&out, "%-26s %10s %10s %6s\n", "mean per guard", "native", "wasm", "ratio")
	for _, g := range order {
		n, w := split[false][g].mean(), split[true][g].mean()
		fmt.Fprintf(&out, "%-26s %8.1fµs %8.1fµs %5.1fx\n", g, us(n), us(w), float64(w)/float64(n))
	}
	// Printed, not logged: a parent benchmark's log is dropped without -v.
	fmt.Print(out.String())
}

// BenchmarkChainAB compares one guard's module with another build of it:
// WARDEN_BENCH_AB=Guard=FILE puts the module in FILE (say, the guard built
// from an earlier commit) in place of the tree's own in one of two wasm
// chains; both run in interleaved rounds in one process, and the medians
// of the chain and of that guard are printed for each.
func BenchmarkChainAB(b *testing.B) {
	spec := os.Getenv("WARDEN_BENCH_AB")
	name, path, ok := strings.Cut(spec, "=")
	if !ok {
		b.Skip("WARDEN_BENCH_AB=Guard=FILE names the other module")
	}
	call, tool := benchCall(b)
	ctx := context.Background()
	mk := func(other bool) *chain.Chain {
		g := guards(b, true)
		if _, known := g[name]; !known {
			b.Fatalf("WARDEN_BENCH_AB: no guard %q", name)
		}
		if other {
			h, err := host.New(host.Options{CacheDir: testdata.CacheDir(b), Clock: func() time.Time { return fixedClock }})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = h.Close(ctx) })
			src, err := host.ReadSource(path, "")
			if err != nil {
				b.Fatal(err)
			}
			p, err := h.Load(ctx, src, host.Policy{Limits: abi.Limits{TimeoutMs: 5000}, Capabilities: firstPartyManifest(b, name).Capabilities})
			if err != nil {
				b.Fatal(err)
			}
			g[name] = chain.Wasm(name, p)
		}
		c, err := chain.New(g, nil, &chain.Invoker{Caller: tool})
		if err != nil {
			b.Fatal(err)
		}
		for range 500 {
			c.Run(ctx, call)
		}
		return c
	}
	chains := []*chain.Chain{mk(true), mk(false)}
	lat := make([][]time.Duration, 2)
	one := make([][]time.Duration, 2)
	for b.Loop() {
		for i, c := range chains {
			start := time.Now()
			r := c.Run(ctx, call)
			lat[i] = append(lat[i], time.Since(start))
			for _, st := range r.Trace {
				if st.Guard == name {
					one[i] = append(one[i], st.Duration)
				}
			}
		}
	}
	median := func(l []time.Duration) time.Duration {
		sort.Slice(l, func(a, c int) bool { return l[a] < l[c] })
		return l[len(l)/2].Round(time.Microsecond)
	}
	for i, side := range []string{path, "this tree"} {
		fmt.Printf("%s from %s: chain median %v, %s median %v\n", name, side, median(lat[i]), name, median(one[i]))
	}
}

// writeGuestProfile writes the guest profile of n chain calls.
func writeGuestProfile(b *testing.B, n int) {
	f, err := os.Create(*guestProfilePath)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := guestProfile.WriteTo(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("guest profile of %d calls: %s\n", n, *guestProfilePath)
}

type guardTime struct {
	total time.Duration
	n     int
}

func (g *guardTime) mean() time.Duration {
	if g == nil || g.n == 0 {
		return 0
	}
	return g.total / time.Duration(g.n)
}

func stepName(st chain.Step) string { return st.Guard + " (" + string(st.Phase) + ")" }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// TestChainBenchCallSucceeds keeps the benchmark's call honest in `go test`.
func TestChainBenchCallSucceeds(t *testing.T) {
	t.Parallel()
	call, tool := benchCall(t)
	c, err := chain.New(guards(t, false), nil, &chain.Invoker{Caller: tool})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Run(context.Background(), call)
	if res.Observation.Outcome != abi.OutcomeSuccess || !res.Invoked || len(res.Trace) != 9 {
		t.Fatalf("%v %s %q trace %+v", res.Observation.Outcome, res.Observation.Code, res.Observation.Message(), res.Trace)
	}
}

// firstPartyManifest is the manifest of the first-party guard name.
func firstPartyManifest(tb testing.TB, name string) abi.Manifest {
	p, ok := plugins.Lookup(name)
	if !ok {
		tb.Fatalf("no first-party plugin %s", name)
	}
	return p.Plugin.Manifest
}
