package chain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop/chain"
)

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
	return call, script{"search_articles": answer(resp)}
}

// BenchmarkChain runs the whole first-party chain natively and as wasm, in
// one run, reporting the median latency beside the mean.
func BenchmarkChain(b *testing.B) {
	call, tool := benchCall(b)
	for _, wasm := range []bool{false, true} {
		name := "native"
		if wasm {
			name = "wasm"
		}
		fp := guards(b, wasm)
		c, err := chain.New(fp, nil, &chain.Invoker{Caller: tool})
		if err != nil {
			b.Fatal(err)
		}
		check := c.Run(context.Background(), call)
		if check.Observation.Outcome != abi.OutcomeSuccess || !check.Invoked {
			b.Fatalf("%s: %v %s %s\n%+v", name, check.Observation.Outcome, check.Observation.Code, check.Observation.Message(), check.Trace)
		}
		for i := 0; i < 2000; i++ { // steady state: guest heaps warmed
			c.Run(context.Background(), call)
		}
		b.Run(name, func(b *testing.B) {
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				c.Run(context.Background(), call)
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.SetParallelism(2)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.Run(context.Background(), call)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

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
