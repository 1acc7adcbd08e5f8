package chain_test

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/services"
	"github.com/agentwarden/warden/plugins"
)

// TestEnvelopeMatchesRequest checks that a guard's envelope spliced from a
// shared host.Envelope is byte for byte the request Guard would encode after
// filtering the state views by the guard's manifest.
func TestEnvelopeMatchesRequest(t *testing.T) {
	t.Parallel()
	state := map[string]json.RawMessage{
		string(abi.CapStateNode):     json.RawMessage(`{"nodeId":"n1"}`),
		string(abi.CapStateLedger):   json.RawMessage(`{"entries":[]}`),
		string(abi.CapStateEvidence): nil, // empty: the key is granted, the view absent
		`state.odd"key`:              json.RawMessage(`{}`),
		"catalog":                    json.RawMessage(`[]`), // not a state view
	}
	ok := abi.Success("工具 q 调用成功", json.RawMessage(`{"code":200}`))
	manifest := func(caps ...abi.Capability) *abi.Manifest { return &abi.Manifest{Capabilities: caps} }
	tests := []struct {
		name   string
		req    abi.Request
		config json.RawMessage
		m      *abi.Manifest
	}{
		{name: "bare", req: abi.Request{Tool: "q"}, m: manifest()},
		{name: "before", req: abi.Request{Phase: abi.PhaseBefore, Tool: "q", CallID: "c1", Locale: abi.LocaleEN,
			Args: json.RawMessage(`{"a":1}`), Contract: json.RawMessage(`{"label":"查"}`), Schema: json.RawMessage(`{"type":"object"}`),
			State: state}, config: json.RawMessage(`{"strict":true}`), m: manifest(abi.CapStateNode, abi.CapStateEvidence, abi.CapStateLedger)},
		{name: "bound and provenance", req: abi.Request{Phase: abi.PhaseBefore, Tool: "q", Args: json.RawMessage(`{"a":1}`),
			Bound: json.RawMessage(`{"a":2}`), Provenance: map[string]string{"a": "EVIDENCE", "b\n": "USER"}, State: state},
			m: manifest(abi.CapStateEvidence)},
		{name: "invalid arguments", req: abi.Request{Phase: abi.PhaseBefore, Tool: "q", ArgsText: `{"a":`, State: state},
			m: manifest(abi.CapStateNode, `state.odd"key`)},
		{name: "after", req: abi.Request{Phase: abi.PhaseAfter, Tool: "q", Args: json.RawMessage(`{"a":1}`), Result: &ok,
			Response: json.RawMessage(`{"code":200}`), OutputSchema: json.RawMessage(`{}`), State: state},
			config: json.RawMessage(`{}`), m: manifest(abi.CapStateLedger, abi.CapStateNode)},
		{name: "request config wins", req: abi.Request{Tool: "q", Config: json.RawMessage(`{"own":1}`)},
			config: json.RawMessage(`{"own":1}`), m: manifest()},
		{name: "spaced raw members", req: abi.Request{Phase: abi.PhaseAfter, Tool: "q", Args: json.RawMessage(" [1, {\"a\":\"b\"}]\n"),
			Contract: json.RawMessage("\t{\"label\" : \"x\"} "), Response: json.RawMessage(` "plain text" `), Result: &ok, State: state},
			config: json.RawMessage(` 7 `), m: manifest(abi.CapStateEvidence)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var env host.Envelope
			env.Set(&tt.req)
			got := env.AppendFor(nil, tt.config, tt.m)

			want := tt.req
			want.ABI, want.Kind, want.Config = abi.Version, abi.RoleGuard, tt.config
			want.State = map[string]json.RawMessage{}
			for k, v := range tt.req.State {
				if c := abi.Capability(k); c.IsStateView() && tt.m.Grants(c) {
					want.State[k] = v
				}
			}
			if w := want.AppendJSON(nil); string(got) != string(w) {
				t.Fatalf("envelope\n got %s\nwant %s", got, w)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON %s", got)
			}
			// The members indexed from the parts answer every path as gjson
			// on the whole envelope, and the large ones need no copy.
			var m services.Members
			env.MembersFor(&m, got, tt.config, tt.m)
			for _, path := range memberPaths {
				w, _ := services.Query(got, path)
				g, err := m.Query(path)
				if err != nil || g.Raw != w.Raw || g.Type != w.Type || g.Str != w.Str || g.Num != w.Num || g.Exists() != w.Exists() {
					t.Fatalf("%s: %#v (%v), the envelope answers %#v", path, g, err, w)
				}
				if stable := m.Stable(); g.Exists() && stable != memberStable[path] {
					t.Errorf("%s: stable %v", path, stable)
				}
			}
			env.Reset()
			if again := env.AppendFor(nil, nil, tt.m); string(again) == string(got) && tt.req.Tool != "" {
				t.Fatalf("Reset kept the request: %s", again)
			}
		})
	}
}

// memberPaths are read from each envelope of TestEnvelopeMatchesRequest
// through its members; memberStable are those answered from the request's
// own bytes when present (the others from the envelope's encoding).
var memberPaths = []string{"abi", "kind", "phase", "tool", "callId", "locale", "provenance", "provenance.a", "provenance.b\n",
	"config", "config.strict", "config.own", "result", "result.outcome", "result.data.code", "contract", "contract.label",
	"schema", "schema.type", "outputSchema", "bound", "bound.a", "args", "args.a", "args.1.a", "args.#", "argsText",
	"state", "state.state\\.node", "state.state\\.node.nodeId", "state.state\\.ledger.entries", "state.state\\.evidence",
	"state.catalog", "state.*", "state.@keys", "state.state\\.node|@keys", "response", "response.code", "response.x",
	"missing", "args.@reverse", "{tool,phase}", "args|@valid"}

var memberStable = map[string]bool{"config": true, "config.strict": true, "config.own": true, "contract": true, "contract.label": true,
	"schema": true, "schema.type": true, "outputSchema": true, "bound": true, "bound.a": true, "args": true, "args.a": true,
	"args.1.a": true, "args.#": true, "state.state\\.node": true, "state.state\\.node.nodeId": true,
	"state.state\\.ledger.entries": true, "response": true, "response.code": true, "args.@reverse": false}

// BenchmarkEnvelope measures the host side of one guarded call's envelopes
// alone (the benchmark call of BenchmarkChain, the first-party guards'
// manifests): a request of its own per guard, filtered and encoded whole, as
// Guard does, against one host.Envelope per phase spliced per guard.
func BenchmarkEnvelope(b *testing.B) {
	call, _ := benchCall(b)
	firstParty := map[string]guest.Plugin{}
	for _, p := range plugins.Guards() {
		firstParty[p.Name] = p.Plugin
	}
	resp := json.RawMessage(`{"code":200,"msg":"ok","data":{"records":[]}}`)
	ok := abi.Success("工具 search_articles 调用成功", resp)
	phase := func(p abi.Phase) abi.Request {
		r := abi.Request{Phase: p, Tool: call.Tool, CallID: call.CallID, Args: call.Args, Contract: call.Contract,
			Schema: call.Schema, State: call.State}
		if p == abi.PhaseAfter {
			r.Bound, r.Result, r.Response = call.Args, &ok, resp
		}
		return r
	}
	phases := []struct {
		p      abi.Phase
		guards []string
	}{{abi.PhaseBefore, chain.FirstPartyBefore}, {abi.PhaseAfter, chain.FirstPartyAfter}}
	buf := make([]byte, 0, 16<<10)
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, ph := range phases {
				for _, g := range ph.guards {
					req := phase(ph.p)
					req.ABI, req.Kind = abi.Version, abi.RoleGuard
					req.State = make(map[string]json.RawMessage, len(call.State))
					for k, v := range call.State {
						if c := abi.Capability(k); c.IsStateView() && firstParty[g].Manifest.Grants(c) {
							req.State[k] = v
						}
					}
					buf = req.AppendJSON(buf[:0])
				}
			}
		}
	})
	b.Run("envelope", func(b *testing.B) {
		b.ReportAllocs()
		var env host.Envelope
		for b.Loop() {
			for _, ph := range phases {
				req := phase(ph.p)
				env.Set(&req)
				for _, g := range ph.guards {
					m := firstParty[g].Manifest
					buf = env.AppendFor(buf[:0], nil, &m)
				}
			}
		}
	})
}
