package abi

// Locale selects the language of model-facing texts.
type Locale string

// Supported locales. The zero value means LocaleZH, the spec's default.
const (
	LocaleZH Locale = "zh-CN"
	LocaleEN Locale = "en"
)

// ParseLocale maps "", "zh", "zh-CN" to LocaleZH and "en", "en-US" … to
// LocaleEN; anything else falls back to LocaleZH.
func ParseLocale(s string) Locale {
	if len(s) >= 2 && s[:2] == "en" {
		return LocaleEN
	}
	return LocaleZH
}

// Hint names a next-step text (TOOL_OBSERVATION §7.2 ModelHint.NEXT_*). Next
// steps are kept apart from reasons: a reason says what happened, a hint what
// to do now. Placeholders are written {name}.
type Hint string

// The next-step texts.
const (
	NextFixArgs          Hint = "NEXT_FIX_ARGS"
	NextFollowUp         Hint = "NEXT_FOLLOW_UP"
	NextCallTool         Hint = "NEXT_CALL_TOOL"
	NextFail             Hint = "NEXT_FAIL"
	NextProvenance       Hint = "NEXT_PROVENANCE"
	NextApproval         Hint = "NEXT_APPROVAL"
	NextApprovalMismatch Hint = "NEXT_APPROVAL_MISMATCH"
	NextCallWriteFirst   Hint = "NEXT_CALL_WRITE_FIRST"
	NextApprovedFailed   Hint = "NEXT_APPROVED_FAILED"
	NextBusiness         Hint = "NEXT_BUSINESS"
	NextCatalog          Hint = "NEXT_CATALOG"
	NextWaitVerify       Hint = "NEXT_WAIT_VERIFY"
	NextWaitInFlight     Hint = "NEXT_WAIT_IN_FLIGHT"
	NextChangeStrategy   Hint = "NEXT_CHANGE_STRATEGY"
	NextUseAnswer        Hint = "NEXT_USE_ANSWER"
	NextWriteDirectly    Hint = "NEXT_WRITE_DIRECTLY"
	NextRetryLater       Hint = "NEXT_RETRY_LATER"
	NextShrinkCall       Hint = "NEXT_SHRINK_CALL"
	NextReportFailure    Hint = "NEXT_REPORT_FAILURE"
	NextTimeout          Hint = "NEXT_TIMEOUT"
	NextOutputSet        Hint = "NEXT_OUTPUT_SET"
	NextOptionalOutput   Hint = "NEXT_OPTIONAL_OUTPUT"
	NextFinishOutput     Hint = "NEXT_FINISH_OUTPUT"
	NextSettleWrite      Hint = "NEXT_SETTLE_WRITE"
	NextDoTarget         Hint = "NEXT_DO_TARGET"
	NextDoBusiness       Hint = "NEXT_DO_BUSINESS"
	NextCiteEvidence     Hint = "NEXT_CITE_EVIDENCE"
	NextDelegate         Hint = "NEXT_DELEGATE"
	NextReconfirm        Hint = "NEXT_RECONFIRM"
	NextFallback         Hint = "NEXT_FALLBACK"
	NextDecideAgain      Hint = "NEXT_DECIDE_AGAIN"
	NextReissueShorter   Hint = "NEXT_REISSUE_SHORTER"
	NextVerifyLater      Hint = "NEXT_VERIFY_LATER"
	NextDistinctCalls    Hint = "NEXT_DISTINCT_CALLS"
	NextAuthFailed       Hint = "NEXT_AUTH_FAILED"
)

var hints = map[Hint][2]string{
	NextFixArgs:          {"按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户", "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"},
	NextFollowUp:         {"调用 builtin_node_follow_up 向用户询问 {param}", "ask the user for {param} with builtin_node_follow_up"},
	NextCallTool:         {"先调用 {tool} 查到 {param} 的取值，再用查到的值调用", "call {tool} first to look up {param}, then call again with the value it returned"},
	NextFail:             {"调用 builtin_node_fail 说明原因", "call builtin_node_fail and state the reason"},
	NextProvenance:       {"改用用户提供或查询得到的值；无法取得时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因", "use a value the user gave or a query returned; if you cannot get one, ask with builtin_node_follow_up or call builtin_node_fail"},
	NextApproval:         {"调用 builtin_node_approval 申请用户确认，toolName 填 {tool}", "ask the user to confirm with builtin_node_approval, toolName {tool}"},
	NextApprovalMismatch: {"调用 builtin_node_approval 时 toolName 填被拦下的写工具 {gated}", "call builtin_node_approval with toolName {gated}, the write that is held"},
	NextCallWriteFirst:   {"先直接调用写工具，被拦下后再按提示申请确认", "call the write tool directly first; ask for approval only when it is held"},
	NextApprovedFailed:   {"用 builtin_node_follow_up 向用户说明失败原因并询问如何处理；用户不再继续时 builtin_node_fail；不要自行改用其它写操作补救", "explain the failure to the user with builtin_node_follow_up and ask how to proceed; call builtin_node_fail if the user stops; do not try another write on your own"},
	NextBusiness:         {"根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail", "fix the arguments according to the failure and call again, or explain to the user with builtin_node_follow_up; call builtin_node_fail if you cannot go on"},
	NextCatalog:          {"只调用本节点工具目录中的工具", "call only tools listed in this node's catalogue"},
	NextWaitVerify:       {"等待写结果核实完成，不要再次调用该写工具", "wait until the write is verified; do not call the write tool again"},
	NextWaitInFlight:     {"等待该写操作结束，不要再次调用", "wait until the write ends; do not call it again"},
	NextChangeStrategy:   {"换一种做法：修改参数、改用其它工具，或根据已有结果调用 builtin_node_finish / builtin_node_fail", "change strategy: other arguments, another tool, or finish or fail with what you have"},
	NextUseAnswer:        {"按用户的回答继续，不要再问同一个问题", "continue with the user's answer; do not ask the same question again"},
	NextWriteDirectly:    {"直接调用写工具，确认由审批流程完成，不要用追问口头确认", "call the write tool directly; confirmation happens through approval, not a follow-up question"},
	NextRetryLater:       {"稍后重试一次；仍失败时调用 builtin_node_fail 说明原因", "retry once later; if it fails again, call builtin_node_fail"},
	NextShrinkCall:       {"缩小参数或结果范围后再调用", "call again with smaller arguments or a narrower request"},
	NextReportFailure:    {"调用 builtin_node_fail 说明该插件不可用", "call builtin_node_fail and report that the plugin is unavailable"},
	NextTimeout:          {"缩小查询范围后重试；写操作不要重复调用，等待核实", "retry with a narrower request; do not repeat a write, wait for it to be verified"},
	NextOutputSet:        {"可写的键：{keys}；来源类型：{sources}", "keys you may write: {keys}; source types: {sources}"},
	NextOptionalOutput:   {"也可以不写，直接调用 builtin_node_finish", "you may also skip it and call builtin_node_finish"},
	NextFinishOutput:     {"在 output 中写明完成情况后再调用 builtin_node_finish", "describe what was done in output and call builtin_node_finish again"},
	NextSettleWrite:      {"等待写操作 {tool} 结算后再完成", "wait until write {tool} is settled before finishing"},
	NextDoTarget:         {"先成功执行 {tool}，再调用 builtin_node_finish", "make {tool} succeed first, then call builtin_node_finish"},
	NextDoBusiness:       {"先调用业务工具完成任务，再调用 builtin_node_finish", "call a business tool to do the task first, then call builtin_node_finish"},
	NextCiteEvidence:     {"只引用本节点或上游工具返回的证据 ID", "cite only evidence IDs returned by this node's or upstream tools"},
	NextDelegate:         {"改为自行调用工具完成，或调用 builtin_node_fail 说明原因", "do it with your own tools instead, or call builtin_node_fail"},
	NextReconfirm:        {"重新调用 builtin_node_approval 申请确认", "ask for confirmation again with builtin_node_approval"},
	NextFallback:         {"改用备用工具 {tool} 获取数据；仍失败时调用 builtin_node_fail 说明原因", "use the fallback tool {tool} instead; if it fails too, call builtin_node_fail"},
	NextDecideAgain:      {"先按同一轮前面那次调用的返回处理，再决定是否重新调用本工具", "deal with the result of the earlier call of this turn first, then decide whether to call this tool again"},
	NextReissueShorter:   {"重新发出完整的调用；参数或说明过长时先缩短", "issue the call again in full; shorten long arguments or text first"},
	NextAuthFailed:       {"不要重试，也不要改用其它工具绕过；调用 builtin_node_fail 说明工具 {tool} 的服务拒绝了授权，需由管理员更新凭据", "do not retry it or work around it with another tool; call builtin_node_fail and report that the server of tool {tool} refused the credentials, which an administrator must renew"},
	NextVerifyLater:      {"{seconds} 秒后（{until} 之后）再核实一次，不要再次调用该写工具", "verify again in {seconds} s (after {until}); do not call the write tool again"},
	NextDistinctCalls:    {"重新发出本轮确实需要的调用，每个调用使用自己的调用 id", "issue again the calls of this turn you still need, each with an id of its own"},
}

// Hints returns every registered hint name.
func Hints() []Hint {
	out := make([]Hint, 0, len(hints))
	for h := range hints {
		out = append(out, h)
	}
	return out
}

// Text returns the hint's text in the locale with {name} placeholders filled
// from kv pairs. An unknown hint returns "".
func (h Hint) Text(l Locale, kv ...string) string {
	t, ok := hints[h]
	if !ok {
		return ""
	}
	if l == LocaleEN {
		return Fill(t[1], kv...)
	}
	return Fill(t[0], kv...)
}
