package loop

import (
	"fmt"

	"github.com/agentwarden/warden/abi"
)

type textID int

const (
	txtMaxRounds textID = iota
	txtNoProgress
	txtSkipped
	txtAnswer
	txtAnswerFields
	txtRejected
	txtCancelled
	txtVerifyAsk
	txtCallInterrupted
	txtVerifyTook
	txtVerifyNotTook
	txtUserTook
	txtUserNotTook
	txtDelegationDone
	txtDelegationFailed
	txtNodeObjective
	txtReflect
	txtInputsMissing
	txtPlanPrompt
)

// texts are the loop's own model- and user-facing texts: zh-CN, en.
var texts = map[textID][2]string{
	txtMaxRounds:        {"节点已达到总轮次上限（%s 轮）", "the node reached its limit of %s rounds"},
	txtNoProgress:       {"节点连续 %s 轮没有进展", "the node made no progress for %s turns in a row"},
	txtSkipped:          {"未执行：同一轮中前面的调用没有成功，本轮其余调用已跳过。请根据前面调用的返回重新决定。", "not run: an earlier call of this turn did not succeed, so the rest of the turn was skipped. Decide again from that call's result."},
	txtAnswer:           {"用户回答了追问「%s」：%s", "the user answered the question \"%s\": %s"},
	txtAnswerFields:     {"用户回答了追问「%s」（参数：%s）：%s", "the user answered the question \"%s\" (parameters: %s): %s"},
	txtRejected:         {"用户拒绝了确认，未执行写操作 %s。%s", "the user refused the confirmation; write %s was not done. %s"},
	txtCancelled:        {"用户取消了任务，未执行写操作 %s。%s", "the user cancelled the task; write %s was not done. %s"},
	txtVerifyAsk:        {"写操作 %s 的结果不确定（调用超时或中断），请确认它是否已生效？参数：%s", "the outcome of write %s is unknown (the call timed out or was interrupted). Did it take effect? Arguments: %s"},
	txtCallInterrupted:  {"调用 %s 在进程中断时没有返回结果，结果不确定。下一步：写操作会先核实是否已生效，不要再次调用；读操作可以重新调用。", "call %s did not return before the process stopped; its outcome is unknown. Next: a write is verified before anything else, do not call it again; a read may be called again."},
	txtVerifyTook:       {"已核实：写操作 %s 已生效（回查 %s 判定成功），不要再次调用。", "verified: write %s took effect (the check with %s succeeded); do not call it again."},
	txtVerifyNotTook:    {"已核实：写操作 %s 未生效（回查 %s 判定失败）：%s。如仍需执行，可重新调用。", "verified: write %s did not take effect (the check with %s failed): %s. Call it again if it is still needed."},
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
	txtInputsMissing: {"缺失的必填输入：%s", "required inputs missing: %s"},
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
