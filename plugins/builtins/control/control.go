// Package control is the builtin plugin of the node-control tools of
// CONTRACT_SPEC §12: builtin_node_follow_up, builtin_node_approval,
// builtin_node_finish, builtin_node_fail and builtin_node_delegate.
//
// Like every builtin it is stateless: it reads the state views its manifest
// is granted and answers with one observation plus, on success, one effect
// (node.suspend, node.finish, node.fail, node.delegate) that the loop
// applies. A broken rule is REJECTED with the spec's code and a concrete
// next step (TOOL_OBSERVATION §5); missing runtime state is FAILED
// (TOOL_ERROR).
//
// Every rule is decided here, inside the plugin: the finish gate (§10.2),
// follow-up grounding, approval (§14.1) and delegation (§15) read the
// envelope the guest holds and the skill contract, parsed once per contract
// text. Swapping control.wasm therefore changes these rules with no host
// rebuild; New builds a variant whose finish gate has more rules.
package control

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/internal/args"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

// Tool names.
const (
	FollowUp = "builtin_node_follow_up"
	Approval = "builtin_node_approval"
	Finish   = "builtin_node_finish"
	Fail     = "builtin_node_fail"
	Delegate = "builtin_node_delegate"
)

// Plugin is the first-party control builtin.
var Plugin = New(Options{})

// Options configure a build of the control builtin.
type Options struct {
	// FinishRules run in order once the gate of §10.2 and the citation
	// check accepted a builtin_node_finish; the first refusal is reported.
	FinishRules []FinishRule
}

// FinishRule is one more rule of builtin_node_finish. It returns nil to let
// the finish through, or the refusal to report instead.
type FinishRule func(f *FinishCheck) *Refusal

// FinishCheck is a finish the spec's gate accepted, as a FinishRule sees
// it. The views are the call's; a rule must not change them.
type FinishCheck struct {
	Locale   abi.Locale
	Output   string   // the output argument, trimmed
	Cites    []string // evidence IDs the output cites as [ev:<id>], all known
	Node     *abi.NodeView
	Contract *contract.Contract
	Ledger   abi.LedgerView
	Evidence abi.EvidenceView
}

// Refusal is a FinishRule's REJECTED result: a registered code with its
// reason and next step in the call's locale.
type Refusal struct {
	Code         abi.Code
	Reason, Next string
}

// New returns the control builtin with opts; New(Options{}) is Plugin.
func New(opts Options) guest.Plugin {
	extra := append([]FinishRule(nil), opts.FinishRules...)
	return guest.Plugin{Manifest: manifest(), Handle: func(c *guest.Call) { handle(c, extra) }}
}

// manifest is the control builtin's manifest, a fresh value per build.
func manifest() abi.Manifest {
	return abi.Manifest{
		Name: "builtin-control", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin,
		Description: "node-control builtins: follow-up, approval, finish, fail, delegate",
		Tools: []abi.ToolSpec{
			{Name: FollowUp, Description: "向用户追问，节点挂起等待回答。只在有依据时追问：带 expectedFields 时每个字段须是本技能允许来自用户的参数，或须来自查询结果且本节点已有非空的成功查询（让用户选）；不带时须在查询为空或业务失败之后（澄清）。不要用追问口头确认写操作或复述用户原话；本轮刚回答过的问题不要再问。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"question":{"type":"string","minLength":1,"description":"要问用户的问题"},` +
					`"expectedFields":{"type":"array","items":{"type":"string"},"description":"用户回答后补齐的参数路径"},` +
					`"suggestions":{"type":"array","items":{"type":"string"},"description":"供用户选择的候选答案"}},` +
					`"required":["question"],"additionalProperties":false}`)},
			{Name: Approval, Description: "请求用户确认被写入闸门拦下的那次写调用，节点挂起等待确认。先直接调用写工具，被拦下后再调用本工具，toolName 填被拦下的写工具名。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"summary":{"type":"string","minLength":1,"description":"向用户说明将要执行的写操作"},` +
					`"toolName":{"type":"string","minLength":1,"description":"被拦下的写工具名"}},` +
					`"required":["summary","toolName"],"additionalProperties":false}`)},
			{Name: Finish, Description: "声明本节点完成。通过完成判定后节点完成，写入共享值和实体。output 写明完成情况；引用证据时写作 [ev:<证据ID>]。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"output":{"type":"string","minLength":1,"description":"完成情况说明；引用证据写作 [ev:<证据ID>]"}},` +
					`"required":["output"],"additionalProperties":false}`)},
			{Name: Fail, Description: "声明本节点失败，并说明原因。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"reason":{"type":"string","minLength":1,"description":"失败原因"}},` +
					`"required":["reason"],"additionalProperties":false}`)},
			{Name: Delegate, Description: "委派一个可委派的只读技能作为前置节点；前置节点结束后本节点继续。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"skillKey":{"type":"string","minLength":1,"description":"要委派的技能 skill_key"},` +
					`"objective":{"type":"string","description":"前置节点的目标"}},` +
					`"required":["skillKey"],"additionalProperties":false}`)},
		},
		Capabilities: []abi.Capability{
			abi.CapStateNode, abi.CapStateFollowUp, abi.CapStateApproval, abi.CapStateLedger,
			abi.CapStateEvidence, abi.CapStateConversation, abi.CapEffectNode,
		},
	}
}

func handle(g *guest.Call, extra []FinishRule) {
	if args.Invalid(g) {
		return
	}
	c := rules.New(g)
	switch c.Tool {
	case FollowUp:
		if rules.ArgMissing(c, "question") {
			return
		}
		rules.Report(g, followUp(c))
	case Approval:
		if !c.Get(guest.StatePath(abi.CapStateApproval, "gated.tool")).Exists() {
			g.Rejected(abi.ApprovalNotGated, abi.ApprovalNotGated.Reason(c.L), abi.NextCallWriteFirst.Text(c.L))
			return
		}
		if rules.ArgMissing(c, "summary") {
			return
		}
		rules.Report(g, approval(c))
	case Finish:
		if rules.Blank(c.ArgValue("output")) {
			g.Rejected(abi.FinishMissingOutput, abi.FinishMissingOutput.Reason(c.L), abi.NextFinishOutput.Text(c.L))
			return
		}
		rules.Report(g, finish(c, extra))
	case Fail:
		fail(c)
	case Delegate:
		if rules.ArgMissing(c, "skillKey") {
			return
		}
		rules.Report(g, delegate(c))
	default:
		g.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(c.L, "tool", c.Tool), abi.NextCatalog.Text(c.L))
	}
}

// fail reports builtin_node_fail(reason): the payload reuses the argument's
// JSON text, so nothing is encoded.
func fail(c *rules.Call) {
	r := c.ArgValue("reason")
	if r.Type != gjson.String || rules.Blank(r) {
		rules.RejectArg(c, "reason")
		return
	}
	c.G.Effect(abi.EffectNodeFail, []byte(`{"reason":`+r.Raw+`}`))
	if c.L == abi.LocaleEN {
		c.G.Success("the node is marked failed", nil)
		return
	}
	c.G.Success("节点已标记为失败", nil)
}
