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
// All five steps run in the guest, the matching of step 3 included (it reads
// the state views of the envelope the guest holds), so a new generation of
// the plugin can change any of them: New takes Options, e.g. another
// normalisation of the USER source.
package paramcontract

import (
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

// Plugin is the ParamContract guard. Its state views are what the sources
// match against: the node (outputs, inputs, shared, session), the entity
// index (PRIOR_TASK), the evidence (EVIDENCE), and the conversation and
// current follow-up (USER).
var Plugin = New(Options{})

// Options change the rules of a ParamContract generation.
type Options struct {
	// Version is the manifest version; "" is the first-party "1.0.0".
	Version string
	// Normalise is applied to a value and to each recent user message before
	// the USER source looks for the one in the other; nil is Normalise.
	Normalise func(string) string
}

// New returns a ParamContract guard with the given options.
func New(o Options) guest.Plugin {
	g := &guard{normalise: o.Normalise}
	if g.normalise == nil {
		g.normalise = Normalise
	}
	version := o.Version
	if version == "" {
		version = "1.0.0"
	}
	return guest.Plugin{Manifest: manifest(version), Handle: g.handle}
}

type guard struct {
	normalise func(string) string
	// the last user messages normalised (userMessages); natively a guard
	// may serve several goroutines
	mu       sync.Mutex
	lastRaw  string
	lastMsgs []string
	// the last evidence items read (evidenceItems)
	lastEvRaw string
	lastEv    []evItem
}

func manifest(version string) abi.Manifest {
	return abi.Manifest{
		Name: "paramcontract", Version: version, ABI: abi.Version, Role: abi.RoleGuard,
		Description: "checks the source, presence and enum of every contract parameter",
		Phases:      []abi.Phase{abi.PhaseBefore},
		Capabilities: []abi.Capability{abi.CapStateNode, abi.CapStateEntities, abi.CapStateEvidence,
			abi.CapStateConversation, abi.CapStateFollowUp},
	}
}

// The kinds of failure, most severe first (§5.5).
const (
	kindReject = iota
	kindFail
	kindCallTool
	kindAskUser
	kinds
)

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

func (g *guard) handle(c *guest.Call) {
	if !c.Has(abi.FieldContract + ".args") {
		c.Pass(nil)
		return
	}
	params, err := g.provenance(c)
	if err != nil {
		l := c.Locale()
		c.Rejected(abi.ParamProvenanceRejected, abi.ParamProvenanceRejected.Reason(l, "param", "*")+sep(l, "：", ": ")+err.Error(), abi.NextFail.Text(l))
		return
	}
	var failing [kinds][]param
	var facts []abi.Fact
	for _, p := range params {
		if k := p.problem(); k >= 0 {
			failing[k] = append(failing[k], p)
			continue
		}
		if p.present && !p.bound {
			facts = append(facts, abi.Fact{Path: p.path, Source: p.source, Detail: p.ref})
		}
	}
	var l abi.Locale
	for _, f := range failing {
		if len(f) > 0 {
			l = c.Locale() // only a refusal has texts
			break
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
