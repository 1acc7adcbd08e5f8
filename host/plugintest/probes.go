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

// probeTool is the tool a guard's probes guard when no case names one.
const probeTool = "probe_tool"

// probes are the kit's own requests, one set per phase a guard declares or
// tool a builtin provides. Each perturbs a base request: the first author
// case of that phase or tool, or a minimal request when there is none. A
// probe wants no verdict in particular, only a valid one.
func (r *run) probes() []input {
	var out []input
	switch r.m.Role {
	case abi.RoleGuard:
		for _, ph := range r.m.Phases {
			base := abi.Request{Phase: ph, Tool: probeTool, Args: json.RawMessage(`{}`)}
			if ph == abi.PhaseAfter {
				res := abi.Success("ok", json.RawMessage(`{}`))
				base.Result, base.Response = &res, json.RawMessage(`{}`)
			}
			for _, c := range r.opts.Cases {
				if c.Request.Phase == ph {
					base = c.Request
					break
				}
			}
			out = append(out, r.probeSet(string(ph), base)...)
		}
	case abi.RoleBuiltin:
		for _, t := range r.m.Tools {
			base := abi.Request{Tool: t.Name, Args: json.RawMessage(`{}`)}
			for _, c := range r.opts.Cases {
				if c.Request.Tool == t.Name {
					base = c.Request
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
