package plugintest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
)

// Probe names, the last part of "probe/<phase or tool>/<probe>".
const (
	ProbeEmptyArgs    = "empty-args"
	ProbeArgsNotObj   = "args-not-object"
	ProbeArgsText     = "args-text"
	ProbeUnknownTool  = "unknown-tool"
	ProbeNoContract   = "no-contract-no-config"
	ProbeNearMaxInput = "near-input-limit"
)

// probeTool is the tool a guard's probes guard when no case names one.
const probeTool = "probe_tool"

// unknownTool is a tool no plugin provides.
const unknownTool = "plugintest_unknown_tool"

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
	withArgs := func(args json.RawMessage, text string) abi.Request {
		req := base
		req.Args, req.ArgsText, req.Bound, req.Provenance = args, text, nil, nil
		return req
	}
	unknown := withArgs(json.RawMessage(`{}`), "")
	unknown.Tool, unknown.Contract, unknown.Schema, unknown.OutputSchema = unknownTool, nil, nil, nil
	bare := base
	bare.Contract, bare.Schema, bare.OutputSchema, bare.Config, bare.State = nil, nil, nil, nil, nil
	return []input{
		{name: name(ProbeEmptyArgs), req: withArgs(json.RawMessage(`{}`), "")},
		{name: name(ProbeArgsNotObj), req: withArgs(json.RawMessage(`[1,"two",null]`), "")},
		{name: name(ProbeArgsText), req: withArgs(nil, `{"unterminated": tru`)},
		{name: name(ProbeUnknownTool), req: unknown},
		{name: name(ProbeNoContract), req: bare, noConfig: true},
		r.nearLimit(name(ProbeNearMaxInput), base),
	}
}

// nearLimit pads the base request's arguments until the envelope is exactly
// the plugin's input limit, the largest request the host will send.
func (r *run) nearLimit(name string, base abi.Request) input {
	in := input{name: name}
	limit := r.p.Limits().MaxInputBytes
	req := base
	req.ArgsText, req.Bound, req.Provenance = "", nil, nil
	req.Args = json.RawMessage(`{"plugintest_pad":""}`)
	b, err := json.Marshal(r.envelope(input{req: req}))
	if err != nil {
		in.bad = fmt.Sprintf("encode request: %v", err)
		return in
	}
	pad := limit - len(b)
	if pad < 0 {
		in.bad = fmt.Sprintf("the base request is %d bytes, over the %d-byte input limit", len(b), limit)
		return in
	}
	req.Args = json.RawMessage(`{"plugintest_pad":"` + strings.Repeat("x", pad) + `"}`)
	in.req = req
	if in.raw, err = json.Marshal(r.envelope(input{req: req})); err != nil || len(in.raw) != limit {
		in.bad = fmt.Sprintf("could not size the request to the %d-byte input limit", limit)
	}
	return in
}
