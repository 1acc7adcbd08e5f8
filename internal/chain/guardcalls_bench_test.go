package chain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/services"
)

// recording is a wasm guard that keeps the request of its first call in
// each phase, its state views and response included.
type recording struct {
	chain.EnvelopeGuard
	state map[string]json.RawMessage
	resp  json.RawMessage
	reqs  map[abi.Phase]*abi.Request
}

func (r *recording) GuardEnvelope(ctx context.Context, tenant string, env *host.Envelope) abi.Verdict {
	if ph := env.Request().Phase; r.reqs[ph] == nil {
		req := *env.Request()
		req.Args, req.Bound, req.Contract = bytes.Clone(req.Args), bytes.Clone(req.Bound), bytes.Clone(req.Contract)
		req.Provenance = maps.Clone(req.Provenance)
		if req.Result != nil {
			res := *req.Result
			res.Data = bytes.Clone(res.Data)
			req.Result = &res
		}
		req.State = r.state
		if ph == abi.PhaseAfter {
			req.Response = r.resp
		}
		r.reqs[ph] = &req
	}
	return r.EnvelopeGuard.GuardEnvelope(ctx, tenant, env)
}

// BenchmarkGuardCalls calls each wasm guard of BenchmarkChain on the
// envelope the chain gave it, one guard after another in rounds, and
// prints each guard's median: the guard calls of the chain without the
// chain around them, steadier on a shared machine than the chain's means.
func BenchmarkGuardCalls(b *testing.B) {
	call, tool := benchCall(b)
	gs := guards(b, true)
	resp, _ := tool.CallTool(context.Background(), call.Tool, call.Args)
	recs := map[string]*recording{}
	for name, g := range gs {
		recs[name] = &recording{EnvelopeGuard: g.(chain.EnvelopeGuard), state: call.State, resp: resp.Content, reqs: map[abi.Phase]*abi.Request{}}
		gs[name] = recs[name]
	}
	c, err := chain.New(gs, nil, &chain.Invoker{Caller: tool})
	if err != nil {
		b.Fatal(err)
	}
	if res := c.Run(context.Background(), call); res.Observation.Outcome != abi.OutcomeSuccess {
		b.Fatalf("%v %s", res.Observation.Outcome, res.Observation.Code)
	}
	type one struct {
		name string
		g    chain.EnvelopeGuard
		env  *host.Envelope
		lat  []time.Duration
	}
	var calls []*one
	for name, r := range recs {
		for ph, req := range r.reqs {
			env := new(host.Envelope)
			env.Set(req)
			calls = append(calls, &one{name: fmt.Sprintf("%s (%s)", name, ph), g: r.EnvelopeGuard, env: env})
		}
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].name < calls[j].name })
	ctx := context.Background()
	for range 500 { // warm
		for _, o := range calls {
			if v := o.g.GuardEnvelope(services.WithValidated(ctx), "acme", o.env); !v.Pass {
				b.Fatalf("%s: %+v", o.name, v.Observation)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, o := range calls {
			cctx := services.WithValidated(ctx)
			start := time.Now()
			o.g.GuardEnvelope(cctx, "acme", o.env)
			o.lat = append(o.lat, time.Since(start))
		}
	}
	b.StopTimer()
	var out strings.Builder
	var sum time.Duration
	for _, o := range calls {
		slices.Sort(o.lat)
		m := o.lat[len(o.lat)/2]
		sum += m
		fmt.Fprintf(&out, "%-28s %8.1fµs median\n", o.name, float64(m.Nanoseconds())/1e3)
	}
	fmt.Fprintf(&out, "%-28s %8.1fµs\n", "sum of medians", float64(sum.Nanoseconds())/1e3)
	fmt.Print(out.String())
}
