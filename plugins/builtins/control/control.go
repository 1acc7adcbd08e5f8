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
// The guest checks its own arguments and what one path read can tell (is a
// write gated?); the rules that need the skill contract or a walk over state
// run as host services (internal/services, "builtin.*"), natively, and the
// guest relays their decision. Inside a wasm guest every branch and
// allocation is costly, so no JSON is parsed here beyond the service's
// small answer.
package control

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/internal/relay"
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

// Plugin is the control builtin.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
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
	},
	Handle: handle,
}

func handle(c *guest.Call) {
	switch c.Tool() {
	case FollowUp:
		if relay.ArgMissing(c, "question") {
			return
		}
		relay.Decision(c, "builtin.follow_up")
	case Approval:
		if !c.Has(guest.StatePath(abi.CapStateApproval, "gated.tool")) {
			l := c.Locale()
			c.Rejected(abi.ApprovalNotGated, abi.ApprovalNotGated.Reason(l), abi.NextCallWriteFirst.Text(l))
			return
		}
		if relay.ArgMissing(c, "summary") {
			return
		}
		relay.Decision(c, "builtin.approval")
	case Finish:
		if relay.Blank(c.Get("args.output")) {
			l := c.Locale()
			c.Rejected(abi.FinishMissingOutput, abi.FinishMissingOutput.Reason(l), abi.NextFinishOutput.Text(l))
			return
		}
		relay.Decision(c, "builtin.finish")
	case Fail:
		fail(c)
	case Delegate:
		if relay.ArgMissing(c, "skillKey") {
			return
		}
		relay.Decision(c, "builtin.delegate")
	default:
		l := c.Locale()
		c.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", c.Tool()), abi.NextCatalog.Text(l))
	}
}

// fail reports builtin_node_fail(reason): the payload reuses the argument's
// JSON text, so nothing is encoded in the guest.
func fail(c *guest.Call) {
	r := c.Get("args.reason")
	if r.Type != gjson.String || relay.Blank(r) {
		relay.RejectArg(c, "reason")
		return
	}
	c.Effect(abi.EffectNodeFail, []byte(`{"reason":`+r.Raw+`}`))
	if c.Locale() == abi.LocaleEN {
		c.Success("the node is marked failed", nil)
		return
	}
	c.Success("节点已标记为失败", nil)
}
