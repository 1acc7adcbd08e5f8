// Package paramcontract is ParamContract, the third guard of the chain
// (CONTRACT_SPEC §13, step 3): for every parameter the tool's contract
// lists, the five steps of §5.3 on the bound arguments and the provenance
// ArgBinding recorded —
//
//  1. binding (done by ArgBinding; its sources arrive as provenance);
//  2. a missing value passes when required is false, else missing.action
//     decides: ASK_USER, CALL_TOOL (a CALL_TOOL without a tool passes) or
//     FAIL;
//  3. the value's source: the binding's, MODEL when from/const bound
//     nothing, else the first of sources that matches (USER, EVIDENCE,
//     NODE_OUTPUT, SHARED, SESSION, PRIOR_TASK; PLATFORM and CONTRACT never
//     match; MODEL always does), MODEL when none does;
//  4. MODEL without MODEL in sources: ask the user when USER is in sources,
//     else reject now;
//  5. a value outside enum: ask the user.
//
// When several parameters fail, the most severe kind wins: reject now >
// FAIL > CALL_TOOL > ASK_USER, and the observation names every parameter
// of that kind (by label when set). All of it is REJECTED with a
// PARAM_PROVENANCE_* code (TOOL_OBSERVATION §5).
//
// The matching of step 3 reads state views and compares values; the host
// service contract.provenance does it natively. The guest decides.
package paramcontract

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the ParamContract guard. Its state views are what the sources
// match against: the node (outputs, inputs, shared, session), the entity
// index (PRIOR_TASK), the evidence (EVIDENCE), and the conversation and
// current follow-up (USER).
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "paramcontract", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard,
		Description: "checks the source, presence and enum of every contract parameter",
		Phases:      []abi.Phase{abi.PhaseBefore},
		Capabilities: []abi.Capability{abi.CapStateNode, abi.CapStateEntities, abi.CapStateEvidence,
			abi.CapStateConversation, abi.CapStateFollowUp},
	},
	Handle: handle,
}

// The kinds of failure, most severe first (§5.5).
const (
	kindReject = iota
	kindFail
	kindCallTool
	kindAskUser
	kinds
)

// param is one record of contract.provenance (see its doc for the fields).
type param struct {
	path, name, source, ref, action, tool, message, enum string
	present, enumOK, required, modelOK, userOK, bound    bool
}

func parse(rec string) (param, bool) {
	f := strings.Split(rec, "\x1f")
	if len(f) != 14 {
		return param{}, false
	}
	return param{
		path: f[0], name: f[1], present: f[2] == "1", source: f[3], ref: f[4], enumOK: f[5] == "1", required: f[6] == "1",
		action: f[7], tool: f[8], message: f[9], modelOK: f[10] == "1", userOK: f[11] == "1", bound: f[12] == "1", enum: f[13],
	}, true
}

// problem is what one parameter needs, or -1.
func (p param) problem() int {
	switch {
	case !p.present:
		switch {
		case !p.required:
			return -1
		case p.action == "FAIL":
			return kindFail
		case p.action == "CALL_TOOL":
			if p.tool == "" {
				return -1
			}
			return kindCallTool
		}
		return kindAskUser
	case p.source == "MODEL" && !p.modelOK:
		if p.userOK {
			return kindAskUser
		}
		return kindReject
	case !p.enumOK:
		return kindAskUser
	}
	return -1
}

func handle(c *guest.Call) {
	if !c.Has(abi.FieldContract + ".args") {
		c.Pass(nil)
		return
	}
	l := c.Locale()
	out, err := c.Service("contract.provenance", nil)
	if err != nil {
		c.Rejected(abi.ParamProvenanceRejected, abi.ParamProvenanceRejected.Reason(l, "param", "*")+sep(l, "：", ": ")+err.Error(), abi.NextFail.Text(l))
		return
	}
	var failing [kinds][]param
	var facts []abi.Fact
	for rec := range strings.SplitSeq(string(out), "\x1e") {
		p, ok := parse(rec)
		if !ok {
			continue
		}
		if k := p.problem(); k >= 0 {
			failing[k] = append(failing[k], p)
			continue
		}
		if p.present && !p.bound {
			facts = append(facts, abi.Fact{Path: p.path, Source: p.source, Detail: p.ref})
		}
	}
	switch {
	case len(failing[kindReject]) > 0:
		ps := failing[kindReject]
		names := join(l, ps)
		next := abi.NextProvenance.Text(l)
		if tool := sameTool(ps); tool != "" {
			next = abi.NextCallTool.Text(l, "tool", tool, "param", names)
		}
		c.Rejected(abi.ParamProvenanceRejected, abi.ParamProvenanceRejected.Reason(l, "param", names), next)
	case len(failing[kindFail]) > 0:
		ps := failing[kindFail]
		reason := abi.ParamProvenanceFail.Reason(l, "param", join(l, ps))
		var msgs []string
		for _, p := range ps {
			if p.message != "" {
				msgs = append(msgs, p.message)
			}
		}
		if len(msgs) > 0 {
			reason += sep(l, "：", ": ") + strings.Join(msgs, sep(l, "；", "; "))
		}
		c.Rejected(abi.ParamProvenanceFail, reason, abi.NextFail.Text(l))
	case len(failing[kindCallTool]) > 0:
		// One tool at a time: the first parameter's, with every parameter
		// that tool looks up.
		tool := failing[kindCallTool][0].tool
		var ps []param
		for _, p := range failing[kindCallTool] {
			if p.tool == tool {
				ps = append(ps, p)
			}
		}
		names := join(l, ps)
		c.Rejected(abi.ParamProvenanceCallTool, abi.ParamProvenanceCallTool.Reason(l, "param", names, "tool", tool),
			abi.NextCallTool.Text(l, "tool", tool, "param", names))
	case len(failing[kindAskUser]) > 0:
		ps := failing[kindAskUser]
		names := join(l, ps)
		reason := abi.ParamProvenanceAskUser.Reason(l, "param", names)
		var enums []string
		for _, p := range ps {
			if p.present && !p.enumOK && (p.source != "MODEL" || p.modelOK) {
				enums = append(enums, enumText(l, p))
			}
		}
		if len(enums) > 0 {
			reason += sep(l, "：", ": ") + strings.Join(enums, sep(l, "；", "; "))
		}
		c.Rejected(abi.ParamProvenanceAskUser, reason, abi.NextFollowUp.Text(l, "param", names))
	default:
		c.Pass(nil, facts...)
	}
}

func enumText(l abi.Locale, p param) string {
	if l == abi.LocaleEN {
		return p.name + " must be one of " + p.enum
	}
	return p.name + " 的取值须为 " + p.enum + " 之一"
}

// sameTool is the lookup tool every rejected parameter names with
// missing CALL_TOOL, or "": the next step can then point at it.
func sameTool(ps []param) string {
	tool := ""
	for _, p := range ps {
		if p.action != "CALL_TOOL" || p.tool == "" || (tool != "" && p.tool != tool) {
			return ""
		}
		tool = p.tool
	}
	return tool
}

func join(l abi.Locale, ps []param) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return strings.Join(names, sep(l, "、", ", "))
}

func sep(l abi.Locale, zh, en string) string {
	if l == abi.LocaleEN {
		return en
	}
	return zh
}
