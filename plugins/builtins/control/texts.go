package control

import "github.com/agentwarden/warden/plugins/builtins/internal/rules"

// Texts of the control builtins that no error code or hint carries.
var (
	txFollowUpOK       = rules.Text{"已向用户追问，节点挂起等待回答", "the question was sent to the user; the node waits for the answer"}
	txApprovalOK       = rules.Text{"已请求用户确认写操作 {tool}，节点挂起等待确认", "the user was asked to confirm write {tool}; the node waits for the answer"}
	txFinishOK         = rules.Text{"节点已完成", "the node is done"}
	txDelegateOK       = rules.Text{"已委派技能 {skill} 作为前置节点，前置节点结束后本节点继续", "skill {skill} was delegated as a pre-node; this node continues when it ends"}
	txFieldsNotAskable = rules.Text{"字段 {fields} 不是本技能允许向用户询问的参数（可询问：{askable}）", "{fields} are not parameters this skill may ask the user for (askable: {askable})"}
	txFieldsNeedQuery  = rules.Text{"字段 {fields} 须来自查询结果，但本节点还没有非空的成功查询", "{fields} must come from query results, but this node has no successful non-empty query yet"}
	txNoBusinessCall   = rules.Text{"没有待补参数，且本节点还没有调用过业务工具", "no expected fields, and this node has not called a business tool yet"}
	txLastCallHasData  = rules.Text{"没有待补参数，且最近一次业务调用 {tool} 已成功返回数据", "no expected fields, and the last business call {tool} succeeded with data"}
	txVerbalConfirm    = rules.Text{"不能用追问口头确认写操作", "a write may not be confirmed verbally through a follow-up question"}
	txEchoUser         = rules.Text{"问题复述了用户刚说过的话", "the question repeats what the user just said"}
	txOutputSourceBad  = rules.Text{"来源类型 {source} 不被接受（允许：{allowed}）", "source type {source} is not accepted (allowed: {allowed})"}
	txNotDelegatable   = rules.Text{"该技能不可委派（可委派：{skills}）", "it is not delegatable (delegatable: {skills})"}
	txDelegateSelf     = rules.Text{"不能委派本节点自己的技能", "a node cannot delegate its own skill"}
	txDelegateDepth    = rules.Text{"已到委派层级上限 {max}", "the delegation depth limit {max} is reached"}
)
