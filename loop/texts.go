package loop

import (
	"fmt"

	"github.com/agentwarden/warden/abi"
)

type textID int

const (
	txtMaxRounds textID = iota
	txtNoProgress
	txtAnswer
	txtAnswerFields
	txtRejected
	txtCancelled
	txtVerifyAsk
	txtVerifyTook
	txtUserTook
	txtUserNotTook
	txtDelegationDone
	txtDelegationFailed
	txtNodeObjective
	txtReflect
	txtInputsMissing
	txtPlanPrompt
	txtMsgEvidence
	txtMsgWithData
	txtMsgEmpty
	txtMsgTruncated
	txtMsgTruncatedNoEvidence
	txtMsgDownstream
	txtMsgBinary
	txtMsgCompacted
	txtMsgCompactedNoEvidence
	txtInterruptedDetail
	txtLengthReason
	txtRefusal
	txtVerifyNotTookReason
	txtCut
	txtProviderOf
	txtNoToolCall
	txtRefusedTurn
	txtLengthTurn
	txtNextToolCall
)

// texts are the loop's own model- and user-facing texts: zh-CN, en.
var texts = map[textID][2]string{
	txtMaxRounds:        {"节点已达到总轮次上限（%s 轮）", "the node reached its limit of %s rounds"},
	txtNoProgress:       {"节点连续 %s 轮没有进展", "the node made no progress for %s turns in a row"},
	txtAnswer:           {"用户回答了追问「%s」：%s", "the user answered the question \"%s\": %s"},
	txtAnswerFields:     {"用户回答了追问「%s」（参数：%s）：%s", "the user answered the question \"%s\" (parameters: %s): %s"},
	txtRejected:         {"用户拒绝了确认，未执行写操作 %s。%s", "the user refused the confirmation; write %s was not done. %s"},
	txtCancelled:        {"用户取消了任务，未执行写操作 %s。%s", "the user cancelled the task; write %s was not done. %s"},
	txtVerifyAsk:        {"写操作 %s 的结果不确定（调用超时或中断），请确认它是否已生效？参数：%s", "the outcome of write %s is unknown (the call timed out or was interrupted). Did it take effect? Arguments: %s"},
	txtVerifyTook:       {"已核实：写操作 %s 已生效（回查 %s 判定成功），不要再次调用。", "verified: write %s took effect (the check with %s succeeded); do not call it again."},
	txtUserTook:         {"用户确认写操作 %s 已生效，不要再次调用。", "the user confirmed that write %s took effect; do not call it again."},
	txtUserNotTook:      {"用户确认写操作 %s 未生效。如仍需执行，可重新调用。", "the user said write %s did not take effect. Call it again if it is still needed."},
	txtDelegationDone:   {"委派的前置节点（技能 %s）已完成：%s", "the delegated pre-node (skill %s) finished: %s"},
	txtDelegationFailed: {"委派的前置节点（技能 %s）未成功（%s）：%s。请据此决定后续处理：换一种方式完成，或向用户说明。", "the delegated pre-node (skill %s) did not succeed (%s): %s. Decide what to do next: reach the goal another way, or tell the user."},
	txtNodeObjective:    {"%s\n本节点目标：%s", "%s\nGoal of this node: %s"},
	txtReflect: {`上一次工具调用没有成功。先按两步反思，再行动：
1. 错误诊断：错误类别（格式/参数/工具选择/执行/语义/权限）、失败的步骤、依据（返回原文）、根本原因。
2. 修正提案：修正动作（重试/重写参数/切换工具/降级处理/上报）、修正后的完整调用、预期结果。
修正必须遵守该返回中"下一步："的要求，不能替代它。`, `The last tool call did not succeed. Reflect in two steps before acting:
1. Diagnosis: the error category (format, argument, tool choice, execution, semantic, permission), the failed step, the evidence (the result's text), the root cause.
2. Fix proposal: the action (retry, rewrite arguments, switch tool, degrade, report), the full corrected call, the expected result.
The fix must follow what the result says after "Next:"; it never replaces it.`},
	txtMsgEvidence:            {"证据 ID：%s（在完成说明中引用写作 [ev:%s]）", "evidence id: %s (cite it in the finish output as [ev:%s])"},
	txtMsgWithData:            {"结果：有数据（success_with_data）", "result: has data (success_with_data)"},
	txtMsgEmpty:               {"结果：为空（success_empty）：调用成功，但在当前条件下没有匹配的数据；这不是失败，不要编造数据", "result: empty (success_empty): the call succeeded and nothing matches these conditions; this is not a failure, do not make data up"},
	txtMsgTruncated:           {`结果共 %s 字节，超过 %s 字节的预算，下面的 JSON 已按结构截断（truncated: true），末尾的成员或元素被省略；完整结果用 builtin_evidence_get 读取：{"evidenceId":"%s","page":1}，再按返回的 nextPage 翻页`, `the result has %s bytes, over the %s-byte budget, so the JSON below is cut on its structure (truncated: true): members or elements at its end are left out; read the whole result with builtin_evidence_get {"evidenceId":"%s","page":1}, then follow nextPage`},
	txtMsgTruncatedNoEvidence: {"结果共 %s 字节，超过 %s 字节的预算，下面的 JSON 已按结构截断（truncated: true），末尾的成员或元素被省略", "the result has %s bytes, over the %s-byte budget, so the JSON below is cut on its structure (truncated: true): members or elements at its end are left out"},
	txtMsgDownstream:          {"工具返回：", "the tool returned:"},
	txtMsgBinary:              {"[%s，%s，%s 字节，未显示；原始内容在证据 %s]", "[%s, %s, %s bytes, not shown; the raw content is in evidence %s]"},
	txtMsgCompacted:           {`（已压缩）工具 %s 的这次结果已从对话中省略以节省上下文；证据 ID：%s（引用写作 [ev:%s]），需要时用 builtin_evidence_get {"evidenceId":"%s"} 重新读取`, `(compacted) this result of tool %s was left out of the conversation to save context; evidence id: %s (cite it as [ev:%s]); read it again with builtin_evidence_get {"evidenceId":"%s"} when needed`},
	txtMsgCompactedNoEvidence: {"（已压缩）工具 %s 的这次结果已从对话中省略以节省上下文：%s", "(compacted) this result of tool %s was left out of the conversation to save context: %s"},
	txtInterruptedDetail:      {"进程在调用返回前中断，没有返回结果", "the process stopped before the call returned, so it has no result"},
	txtLengthReason:           {"模型输出达到长度上限被截断", "the model's output hit its length limit and was cut"},
	txtRefusal:                {"模型拒绝回答：%s", "the model refused: %s"},
	txtVerifyNotTookReason:    {"已核实：写操作 %s 未生效（回查 %s 判定失败）：%s", "verified: write %s did not take effect (the check with %s failed): %s"},
	txtCut:                    {"…（已截断）", "… (cut)"},
	txtProviderOf:             {"（技能 %s 的输入 %s）", " (input %[2]s of skill %[1]s)"},
	txtNoToolCall:             {"上一轮只有文字，没有调用工具", "your last turn was text only and called no tool"},
	txtRefusedTurn:            {"上一轮拒绝了回答，没有调用工具", "your last turn was a refusal and called no tool"},
	txtLengthTurn:             {"上一轮输出达到长度上限被截断，没有完整的工具调用", "your last turn hit the output length limit and was cut, with no complete tool call"},
	txtNextToolCall:           {"%s；本节点只通过工具调用推进。下一步：调用本节点工具目录中的工具继续；需要用户补充信息时调用 builtin_node_follow_up；已完成时调用 builtin_node_finish；无法完成时调用 builtin_node_fail 说明原因", "%s; this node moves on only through tool calls. Next: call a tool of this node's catalogue; ask the user with builtin_node_follow_up if you need more from them; call builtin_node_finish when the work is done, or builtin_node_fail with the reason if it cannot be done"},
	txtInputsMissing:          {"缺失的必填输入：%s", "required inputs missing: %s"},
	txtPlanPrompt: {`把用户的目标拆成任务图。只能使用下列技能；每个节点做一件事，一次写操作一个节点。
只输出 JSON：{"nodes":[{"id":"n1","skill_key":"…","objective":"…","dependsOn":[],"target":"写工具名或空"}]}

## 技能
%s`, `Split the user's goal into a task graph. Use only the skills below; one thing per node, one write per node.
Answer with JSON only: {"nodes":[{"id":"n1","skill_key":"…","objective":"…","dependsOn":[],"target":"write tool or empty"}]}

## Skills
%s`},
}

func (r *Runner) text(id textID, args ...any) string { return textFor(r.cfg.Locale, id, args...) }

func textFor(l abi.Locale, id textID, args ...any) string {
	t := texts[id][0]
	if l == abi.LocaleEN {
		t = texts[id][1]
	}
	if len(args) == 0 {
		return t
	}
	return fmt.Sprintf(t, args...)
}
