package abi

import (
	"fmt"
	"strings"
)

// Code is a runtime error code, identified by its name (e.g.
// "APPROVAL_REQUIRED"). Its wire form, stored and shown to people, is
// Info().Wire (e.g. "agent_runtime.42221"). A downstream system's own error
// code is never a Code: it goes into the reason text.
type Code string

// Category is the error category of TOOL_USE_RELIABILITY §2.1.
type Category string

// The six categories of TOOL_USE_RELIABILITY §2.1.
const (
	CategoryFormat     Category = "format"
	CategoryArgument   Category = "argument"
	CategoryToolChoice Category = "tool_choice"
	CategoryExecution  Category = "execution"
	CategorySemantic   Category = "semantic"
	CategoryPermission Category = "permission"
)

// Signal is the machine-readable advice a code carries for traces and for
// the model: what kind of move can get past it.
type Signal string

// Signals, from the cheapest move to the most final.
const (
	// SignalRetry: the same call may succeed later (transient failure).
	SignalRetry Signal = "retry"
	// SignalChange: change the arguments, the tool or the strategy.
	SignalChange Signal = "change"
	// SignalWait: a prerequisite step comes first; the call itself is fine.
	SignalWait Signal = "wait"
	// SignalStop: this path cannot succeed; fail or hand over to a person.
	SignalStop Signal = "stop"
)

// CodeInfo describes one registered code.
type CodeInfo struct {
	Code     Code
	Number   int    // the numeric part, e.g. 42221
	Wire     string // "agent_runtime.<Number>"
	Category Category
	// Recoverable reports whether the agent can get past the error on its
	// own (TOOL_USE_RELIABILITY §2.1); false means a person or a stop.
	Recoverable bool
	Signal      Signal
	// Reason templates say what happened, never what to do about it
	// (TOOL_OBSERVATION §7.2). Placeholders are written {name}.
	ReasonZH string
	ReasonEN string
	// HostReserved reports whether only the host (or the runtime around
	// it) may report the code: a plugin's failure, or a call that was never
	// run. A plugin that reports one breaks the result contract, since its
	// own verdict would read as its failure in traces, metrics and failure
	// policies.
	HostReserved bool
}

// Reason returns the code's reason template in the locale, with {name}
// placeholders filled from kv pairs ("tool", "create_site", ...).
func (i CodeInfo) Reason(l Locale, kv ...string) string {
	t := i.ReasonZH
	if l == LocaleEN {
		t = i.ReasonEN
	}
	return Fill(t, kv...)
}

// The codes of CONTRACT_SPEC §17.
const (
	MCPToolError            Code = "MCP_TOOL_ERROR"
	ToolBusinessFailed      Code = "TOOL_BUSINESS_FAILED"
	MCPInvalidParams        Code = "MCP_INVALID_PARAMS"
	MCPRPCError             Code = "MCP_RPC_ERROR"
	ToolTimeout             Code = "TOOL_TIMEOUT"
	ToolUnreachable         Code = "TOOL_UNREACHABLE"
	ToolIOError             Code = "TOOL_IO_ERROR"
	ToolError               Code = "TOOL_ERROR"
	ArgJSONInvalid          Code = "ARG_JSON_INVALID"
	ArgRejected             Code = "ARG_REJECTED"
	ParamProvenanceFail     Code = "PARAM_PROVENANCE_FAIL"
	ParamProvenanceCallTool Code = "PARAM_PROVENANCE_CALL_TOOL"
	ParamProvenanceAskUser  Code = "PARAM_PROVENANCE_ASK_USER"
	ParamProvenanceRejected Code = "PARAM_PROVENANCE_REJECTED"
	FingerprintTrip         Code = "FINGERPRINT_TRIP"
	CatalogDenied           Code = "CATALOG_DENIED"
	StateKeyReserved        Code = "STATE_KEY_RESERVED"
	WritePendingVerify      Code = "WRITE_PENDING_VERIFY"
	WriteInFlight           Code = "WRITE_IN_FLIGHT"
	ApprovalRequired        Code = "APPROVAL_REQUIRED"
	WriteContractIncomplete Code = "WRITE_CONTRACT_INCOMPLETE"
	SourceReject            Code = "SOURCE_REJECT"
	PlatformFieldForbidden  Code = "PLATFORM_FIELD_FORBIDDEN"
	OutputPathInvalid       Code = "OUTPUT_PATH_INVALID"
	OutputWriteForbidden    Code = "OUTPUT_WRITE_FORBIDDEN"
	ApprovalNotGated        Code = "APPROVAL_NOT_GATED"
	ApprovalToolMismatch    Code = "APPROVAL_TOOL_MISMATCH"
	FollowUpAnswered        Code = "FOLLOW_UP_ANSWERED"
	FollowUpUngrounded      Code = "FOLLOW_UP_UNGROUNDED"
	EvidencePathInvalid     Code = "EVIDENCE_PATH_INVALID"
	SkillNotFound           Code = "SKILL_NOT_FOUND"
	DelegateForbidden       Code = "DELEGATE_FORBIDDEN"
	DelegateRepeated        Code = "DELEGATE_REPEATED"
	ProviderUnavailable     Code = "PROVIDER_UNAVAILABLE"
)

// Codes Warden adds for checks the specs name without a number
// (agent_runtime.42250–42269).
const (
	FinishMissingOutput  Code = "FINISH_MISSING_OUTPUT"
	FinishOpenEvidence   Code = "FINISH_OPEN_EVIDENCE"
	FinishOutputMissing  Code = "FINISH_OUTPUT_MISSING"
	FinishOutputEmpty    Code = "FINISH_OUTPUT_EMPTY"
	FinishOutputSource   Code = "FINISH_OUTPUT_SOURCE"
	FinishNeedTarget     Code = "FINISH_NEED_TARGET"
	FinishNeedBusiness   Code = "FINISH_NEED_BUSINESS"
	CitationInvalid      Code = "CITATION_INVALID"
	FingerprintRepeat    Code = "FINGERPRINT_REPEAT"
	OutputSchemaMismatch Code = "OUTPUT_SCHEMA_MISMATCH"
	EvidenceNotFound     Code = "EVIDENCE_NOT_FOUND"
	ApprovalExpired      Code = "APPROVAL_EXPIRED"
	CallSkipped          Code = "CALL_SKIPPED"
	ModelOutputTruncated Code = "MODEL_OUTPUT_TRUNCATED"
	WriteVerifyTooEarly  Code = "WRITE_VERIFY_TOO_EARLY"
	ApprovalArgsChanged  Code = "APPROVAL_ARGS_CHANGED"
	ModelTurnInvalid     Code = "MODEL_TURN_INVALID"
	// ToolAuthFailed: the tool's server refused Warden's credentials
	// (HTTP 401 or 403). Not transient: a retry sends the same
	// credentials, and only whoever configured them can renew them.
	ToolAuthFailed Code = "TOOL_AUTH_FAILED"
)

// Codes the host uses when a plugin itself fails (agent_runtime.50001–50099).
const (
	PluginTrap              Code = "PLUGIN_TRAP"
	PluginTimeout           Code = "PLUGIN_TIMEOUT"
	PluginContractViolation Code = "PLUGIN_CONTRACT_VIOLATION"
	PluginUnavailable       Code = "PLUGIN_UNAVAILABLE"
	GuardUnavailable        Code = "GUARD_UNAVAILABLE"
	PluginOutputTooLarge    Code = "PLUGIN_OUTPUT_TOO_LARGE"
	PluginInputTooLarge     Code = "PLUGIN_INPUT_TOO_LARGE"
	PluginMemoryLimit       Code = "PLUGIN_MEMORY_LIMIT"
)

type reg struct {
	code Code
	num  int
	cat  Category
	rec  bool
	sig  Signal
	zh   string
	en   string
}

var registry = []reg{
	{MCPToolError, 40003, CategoryExecution, true, SignalChange, "MCP 工具 {tool} 返回错误：{detail}", "MCP tool {tool} returned an error: {detail}"},
	{ToolBusinessFailed, 40004, CategoryExecution, true, SignalChange, "业务失败：{detail}", "business failure: {detail}"},
	{MCPInvalidParams, 40014, CategoryArgument, true, SignalChange, "MCP 工具 {tool} 报告参数错误：{detail}", "MCP tool {tool} reported invalid parameters: {detail}"},
	{MCPRPCError, 40015, CategoryExecution, true, SignalRetry, "调用 MCP 工具 {tool} 时发生 RPC 错误：{detail}", "RPC error while calling MCP tool {tool}: {detail}"},
	{ToolTimeout, 40016, CategoryExecution, true, SignalRetry, "工具 {tool} 在 {timeout} 内没有返回", "tool {tool} did not answer within {timeout}"},
	{ToolUnreachable, 40017, CategoryExecution, true, SignalRetry, "工具 {tool} 不可达", "tool {tool} is unreachable"},
	{ToolIOError, 40018, CategoryExecution, true, SignalRetry, "调用工具 {tool} 时发生 IO 异常：{detail}", "I/O error while calling tool {tool}: {detail}"},
	{ToolError, 40029, CategoryExecution, true, SignalRetry, "工具 {tool} 发生未知错误：{detail}", "tool {tool} failed with an unknown error: {detail}"},
	{ArgJSONInvalid, 40020, CategoryFormat, true, SignalChange, "参数不是合法 JSON：{detail}", "arguments are not valid JSON: {detail}"},
	{ArgRejected, 40032, CategoryArgument, true, SignalChange, "参数不符合工具 {tool} 的定义：{detail}", "arguments do not match tool {tool}: {detail}"},
	{ParamProvenanceFail, 40022, CategoryArgument, false, SignalStop, "必填参数 [{param}] 缺失，契约规定此时失败", "required parameter [{param}] is missing and the contract says to fail"},
	{ParamProvenanceCallTool, 40023, CategoryArgument, true, SignalChange, "参数 [{param}] 须先由工具 {tool} 查询得到", "parameter [{param}] must first be looked up with tool {tool}"},
	{ParamProvenanceAskUser, 40024, CategoryArgument, true, SignalChange, "参数 [{param}] 须由用户提供", "parameter [{param}] must come from the user"},
	{ParamProvenanceRejected, 40025, CategoryArgument, true, SignalChange, "参数 [{param}] 的来源不可信", "the source of parameter [{param}] is not trusted"},
	{FingerprintTrip, 40026, CategoryToolChoice, false, SignalStop, "相同参数已连续成功调用 {tool} {count} 次", "tool {tool} already succeeded {count} times in a row with the same arguments"},
	{CatalogDenied, 40027, CategoryToolChoice, true, SignalChange, "工具 {tool} 不在本节点可调用范围内", "tool {tool} is not available in this node"},
	{StateKeyReserved, 40028, CategoryArgument, true, SignalChange, "便签键 {key} 是保留键", "scratch key {key} is reserved"},
	{WritePendingVerify, 40030, CategoryExecution, true, SignalWait, "写操作 {tool} 的结果尚待核实", "the result of write {tool} is still to be verified"},
	{WriteInFlight, 40031, CategoryExecution, true, SignalWait, "写操作 {tool} 正在进行中", "write {tool} is still in progress"},
	{ApprovalRequired, 42221, CategoryPermission, true, SignalWait, "该写操作须经用户确认", "this write must be confirmed by the user"},
	{WriteContractIncomplete, 42206, CategoryToolChoice, true, SignalChange, "申请确认的工具 {tool} 不是本契约的写工具", "tool {tool} is not a write tool of this contract"},
	{SourceReject, 42223, CategoryArgument, true, SignalChange, "来源校验失败：{detail}", "source check failed: {detail}"},
	{PlatformFieldForbidden, 42236, CategoryArgument, true, SignalChange, "{key} 是平台保留字段名", "{key} is a reserved platform field name"},
	{OutputPathInvalid, 42243, CategoryArgument, true, SignalChange, "产出键为空", "the output key is empty"},
	{OutputWriteForbidden, 42244, CategoryArgument, true, SignalChange, "产出键 {key} 未声明", "output key {key} is not declared"},
	{ApprovalNotGated, 42245, CategoryToolChoice, true, SignalChange, "申请确认前没有被写入闸门拦下的写调用", "there is no write call held by the write gate to approve"},
	{ApprovalToolMismatch, 42246, CategoryToolChoice, true, SignalChange, "申请确认的工具 {tool} 与被拦下的写工具 {gated} 不一致", "approval asked for {tool}, but the write held by the gate is {gated}"},
	{FollowUpAnswered, 42247, CategoryToolChoice, true, SignalChange, "这个问题用户本轮刚回答过：{answer}", "the user just answered this question: {answer}"},
	{FollowUpUngrounded, 42248, CategoryToolChoice, true, SignalChange, "追问没有依据：{detail}", "the follow-up question has no grounds: {detail}"},
	{EvidencePathInvalid, 42235, CategoryArgument, true, SignalChange, "证据 ID 为空", "the evidence ID is empty"},
	{SkillNotFound, 40411, CategoryToolChoice, true, SignalChange, "技能 {skill} 不存在", "skill {skill} does not exist"},
	{DelegateForbidden, 42237, CategoryPermission, false, SignalChange, "不允许委派技能 {skill}：{detail}", "delegating skill {skill} is not allowed: {detail}"},
	{DelegateRepeated, 42239, CategoryToolChoice, true, SignalChange, "相同技能 {skill} 与目标的委派已结束且未成功", "a delegation of skill {skill} with the same objective already ended without success"},
	{ProviderUnavailable, 42212, CategoryExecution, false, SignalStop, "输入提供技能 {skill} 不可用", "input provider skill {skill} is not available"},

	{FinishMissingOutput, 42250, CategoryArgument, true, SignalChange, "完成说明 output 为空", "the finish output is empty"},
	{FinishOpenEvidence, 42251, CategoryExecution, true, SignalWait, "写操作 {tool} 尚未结算（{state}）", "write {tool} is not settled yet ({state})"},
	{FinishOutputMissing, 42252, CategorySemantic, true, SignalChange, "必填产出 [{key}] 尚未写入", "required output [{key}] has not been written"},
	{FinishOutputEmpty, 42253, CategorySemantic, true, SignalChange, "必填产出 [{key}] 的值为空", "required output [{key}] is empty"},
	{FinishOutputSource, 42254, CategorySemantic, true, SignalChange, "产出 [{key}] 的来源不合法：{detail}", "the source of output [{key}] is not valid: {detail}"},
	{FinishNeedTarget, 42255, CategorySemantic, true, SignalChange, "完成目标 {tool} 尚未成功执行", "the completion target {tool} has not succeeded yet"},
	{FinishNeedBusiness, 42256, CategorySemantic, true, SignalChange, "本节点还没有完成过任何业务调用", "this node has not completed any business call yet"},
	{CitationInvalid, 42257, CategorySemantic, true, SignalChange, "引用的证据 {evidence} 不存在于本节点或上游证据中", "cited evidence {evidence} is not among this node's or upstream evidence"},
	{FingerprintRepeat, 42258, CategorySemantic, true, SignalChange, "以相同参数再次调用 {tool} 得到了相同结果，状态也没有变化", "calling {tool} again with the same arguments returned the same result and nothing changed"},
	{OutputSchemaMismatch, 42259, CategoryExecution, true, SignalChange, "工具 {tool} 的返回不符合其输出定义：{detail}", "the response of tool {tool} does not match its output schema: {detail}"},
	{EvidenceNotFound, 42260, CategoryArgument, true, SignalChange, "证据 {evidence} 不存在", "evidence {evidence} does not exist"},
	{ApprovalExpired, 42261, CategoryPermission, true, SignalWait, "对 {tool} 的确认已超过有效期", "the confirmation of {tool} has expired"},
	{CallSkipped, 42262, CategoryToolChoice, true, SignalChange, "同一轮中前面的调用没有成功，本调用未执行", "an earlier call of this turn did not succeed, so this call was not run"},
	{ModelOutputTruncated, 42263, CategoryFormat, true, SignalChange, "模型输出达到长度上限被截断，本轮的工具调用未执行", "the model's output hit its length limit and was cut, so this turn's tool calls were not run"},
	{WriteVerifyTooEarly, 42264, CategoryExecution, true, SignalWait, "写操作 {tool} 的调用可能仍在进行（到 {until} 为止），此前核实未发现它生效不能作为结论", "the call of write {tool} may still be in progress (until {until}), so finding it not done before then is not conclusive"},
	{ApprovalArgsChanged, 42265, CategoryPermission, true, SignalWait, "待确认的写操作 {tool} 的参数已不是用户确认时看到的参数，未执行", "the held arguments of write {tool} are no longer the ones the user was shown, so it was not run"},
	{ToolAuthFailed, 42266, CategoryPermission, false, SignalStop, "工具 {tool} 的服务拒绝了 Warden 的凭据：{detail}", "the server of tool {tool} refused Warden's credentials: {detail}"},
	{ModelTurnInvalid, 42269, CategoryFormat, true, SignalChange, "本轮的工具调用不合规，其中任何调用都未执行：{detail}", "the tool calls of this turn are malformed, so none of them was run: {detail}"},

	{PluginTrap, 50001, CategoryExecution, true, SignalRetry, "插件 {plugin} 运行异常：{detail}", "plugin {plugin} trapped: {detail}"},
	{PluginTimeout, 50002, CategoryExecution, true, SignalRetry, "插件 {plugin} 在 {timeout} 内没有给出结果", "plugin {plugin} gave no result within {timeout}"},
	{PluginContractViolation, 50003, CategoryExecution, false, SignalStop, "插件 {plugin} 违反结果约定：{detail}", "plugin {plugin} broke the result contract: {detail}"},
	{PluginUnavailable, 50004, CategoryExecution, true, SignalRetry, "插件 {plugin} 不可用：{detail}", "plugin {plugin} is unavailable: {detail}"},
	{GuardUnavailable, 50005, CategoryExecution, true, SignalRetry, "守卫 {plugin} 不可用：{detail}", "guard {plugin} is unavailable: {detail}"},
	{PluginOutputTooLarge, 50006, CategoryExecution, false, SignalStop, "插件 {plugin} 的输出超过 {limit} 字节", "plugin {plugin} wrote more than {limit} bytes"},
	{PluginInputTooLarge, 50007, CategoryArgument, true, SignalChange, "调用内容超过插件 {plugin} 的 {limit} 字节上限", "the call is larger than the {limit}-byte limit of plugin {plugin}"},
	{PluginMemoryLimit, 50008, CategoryExecution, false, SignalStop, "插件 {plugin} 超出内存上限", "plugin {plugin} ran out of its memory limit"},
}

// hostReserved are the codes no plugin may report: every code of the
// plugin-failure range (50001–50099), which the host builds when a plugin
// traps, times out, breaks the contract, is unavailable or goes over a
// limit; and the loop's CALL_SKIPPED, MODEL_OUTPUT_TRUNCATED and
// MODEL_TURN_INVALID, which say that a call was not run at all.
var hostReserved = map[Code]bool{
	PluginTrap: true, PluginTimeout: true, PluginContractViolation: true, PluginUnavailable: true,
	GuardUnavailable: true, PluginOutputTooLarge: true, PluginInputTooLarge: true, PluginMemoryLimit: true,
	CallSkipped: true, ModelOutputTruncated: true, ModelTurnInvalid: true,
}

var (
	byCode = map[Code]*CodeInfo{}
	byWire = map[string]*CodeInfo{}
	codes  []CodeInfo
)

// WirePrefix is the namespace of every runtime error code's wire form.
const WirePrefix = "agent_runtime."

func init() {
	codes = make([]CodeInfo, len(registry))
	for i, r := range registry {
		codes[i] = CodeInfo{
			Code: r.code, Number: r.num, Wire: fmt.Sprintf("%s%d", WirePrefix, r.num),
			Category: r.cat, Recoverable: r.rec, Signal: r.sig, ReasonZH: r.zh, ReasonEN: r.en,
			HostReserved: hostReserved[r.code],
		}
		info := &codes[i]
		if byCode[r.code] != nil || byWire[info.Wire] != nil {
			panic("abi: duplicate code " + string(r.code))
		}
		byCode[r.code] = info
		byWire[info.Wire] = info
	}
}

// Codes returns every registered code, in registry order.
func Codes() []CodeInfo { return append([]CodeInfo(nil), codes...) }

// Info returns the registry entry of c.
func (c Code) Info() (CodeInfo, bool) {
	i, ok := byCode[c]
	if !ok {
		return CodeInfo{}, false
	}
	return *i, true
}

// HostReserved reports whether only the host may report c (see
// CodeInfo.HostReserved).
func (c Code) HostReserved() bool { i, ok := byCode[c]; return ok && i.HostReserved }

// Known reports whether c is registered.
func (c Code) Known() bool { _, ok := byCode[c]; return ok }

// Wire returns the stored form of c ("agent_runtime.42221"), or c's name if
// it is not registered.
func (c Code) Wire() string {
	if i, ok := byCode[c]; ok {
		return i.Wire
	}
	return string(c)
}

// ParseCode accepts a code's name ("APPROVAL_REQUIRED") or its wire form
// ("agent_runtime.42221").
func ParseCode(s string) (Code, error) {
	if i, ok := byCode[Code(s)]; ok {
		return i.Code, nil
	}
	if i, ok := byWire[s]; ok {
		return i.Code, nil
	}
	return "", fmt.Errorf("abi: code %q: %w", s, ErrUnknownCode)
}

// Fill replaces {name} placeholders in t with the values of kv pairs
// ("name", "value", ...). Placeholders without a value are left as they are.
func Fill(t string, kv ...string) string {
	if len(kv) < 2 || !strings.Contains(t, "{") {
		return t
	}
	pairs := make([]string, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, "{"+kv[i]+"}", kv[i+1])
	}
	return strings.NewReplacer(pairs...).Replace(t)
}

// Reason returns the code's reason template in the locale with {name}
// placeholders filled; an unregistered code returns its name.
func (c Code) Reason(l Locale, kv ...string) string {
	i, ok := byCode[c]
	if !ok {
		return string(c)
	}
	return i.Reason(l, kv...)
}
