package plugintest

import (
	"encoding/json"
	"fmt"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// Probe names, the last part of "probe/<phase or tool>/<probe>". All but
// ProbeNoContract are the host's load-check probes (host.Probes), which a
// slot also runs on every candidate generation.
const (
	ProbeEmptyArgs    = host.ProbeEmptyArgs
	ProbeArgsNotObj   = host.ProbeArgsNotObject
	ProbeArgsText     = host.ProbeArgsText
	ProbeUnknownTool  = host.ProbeUnknownTool
	ProbeNoContract   = "no-contract-no-config"
	ProbeDeepArgs     = host.ProbeDeepArgs
	ProbeWideArgs     = host.ProbeWideArgs
	ProbeUnicode      = host.ProbeUnicode
	ProbeNotUTF8      = host.ProbeNotUTF8
	ProbeNearMaxInput = host.ProbeNearMaxInput
	ProbeBigResult    = host.ProbeBigResult
)

// The kit's own tools, which a guard's probes call in every phase it
// declares besides the tools its author's cases name: a guard runs on every
// call of the skills it is attached to, reads and writes alike, and a
// write's contract is the one with the most in it (sideEffect, confirm,
// idempotencyKey, success and error paths).
const (
	// ProbeReadTool is a read tool (sideEffect NONE).
	ProbeReadTool = "probe_read"
	// ProbeWriteTool is a write tool (sideEffect WRITE).
	ProbeWriteTool = "probe_write"
)

// probeBases are the kit's READ and WRITE requests of one phase.
func probeBases(ph abi.Phase) []abi.Request {
	read := abi.Request{Phase: ph, Tool: ProbeReadTool, Args: json.RawMessage(`{"query":"probe"}`),
		Contract: json.RawMessage(`{"label":"Looking up records","sideEffect":"NONE","args":{"query":{"sources":["USER"],"required":false}}}`),
		Schema:   json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}
	write := abi.Request{Phase: ph, Tool: ProbeWriteTool, Args: json.RawMessage(`{"name":"probe","amount":1}`),
		Contract: json.RawMessage(`{"label":"Creating the record","sideEffect":"WRITE","confirm":true,"idempotencyKey":["name"],` +
			`"args":{"name":{"sources":["USER"],"label":"Name"}},"success":{"path":"code","op":"EQ","value":200},"error":{"code":"code","message":"msg"}}`),
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"amount":{"type":"number"}},"required":["name"]}`)}
	if ph == abi.PhaseAfter {
		rres := abi.Success("ok", json.RawMessage(`{"code":200,"items":[]}`))
		read.Result, read.Response = &rres, json.RawMessage(`{"code":200,"items":[]}`)
		wres := abi.Success("ok", json.RawMessage(`{"code":200,"id":"rec-1"}`))
		write.Result, write.Response = &wres, json.RawMessage(`{"code":200,"id":"rec-1"}`)
	}
	return []abi.Request{read, write}
}

// probes are the kit's own requests: for a guard, one set per phase it
// declares and tool it may be called on (each tool the author's cases of
// that phase name, from its first case, then the kit's READ and WRITE
// tools); for a builtin, one set per tool it provides (from the tool's
// first case, or its input schema alone). A probe wants no verdict in
// particular, only a valid one.
func (r *run) probes() []input {
	var out []input
	switch r.m.Role {
	case abi.RoleGuard:
		for _, ph := range r.m.Phases {
			seen := map[string]bool{}
			var bases []abi.Request
			for _, in := range r.cases {
				if in.bad == "" && in.req.Phase == ph && !seen[in.req.Tool] {
					seen[in.req.Tool] = true
					bases = append(bases, in.req)
				}
			}
			for _, b := range probeBases(ph) {
				if !seen[b.Tool] {
					bases = append(bases, b)
				}
			}
			for _, b := range bases {
				out = append(out, r.probeSet(string(ph)+"/"+b.Tool, b)...)
			}
		}
	case abi.RoleBuiltin:
		for _, t := range r.m.Tools {
			base := abi.Request{Tool: t.Name, Args: json.RawMessage(`{}`), Schema: t.InputSchema}
			for _, in := range r.cases {
				if in.bad == "" && in.req.Tool == t.Name {
					base = in.req
					break
				}
			}
			out = append(out, r.probeSet(t.Name, base)...)
		}
	}
	return out
}

func (r *run) probeSet(target string, base abi.Request) []input {
	name := func(p string) string { return "probe/" + target + "/" + p }
	full := r.envelope(input{req: base})
	// The envelope is sent as the host encodes it; a base whose raw fields
	// are not JSON cannot be.
	var bad string
	if _, err := json.Marshal(full); err != nil {
		bad = fmt.Sprintf("the base request does not encode: %v", err)
	}
	var out []input
	for _, p := range host.Probes(full, r.p.Limits().MaxInputBytes) {
		in := input{name: name(p.Name), req: p.Request, raw: p.Raw, bad: p.Bad}
		if bad != "" {
			in.raw, in.bad = nil, bad
		}
		out = append(out, in)
		if p.Name == host.ProbeUnknownTool {
			nc := base
			nc.Contract, nc.Schema, nc.OutputSchema, nc.Config, nc.State = nil, nil, nil, nil, nil
			out = append(out, input{name: name(ProbeNoContract), req: nc, noConfig: true})
		}
	}
	return out
}
