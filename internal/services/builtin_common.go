package services

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// The builtin.* services decide the rules of the node-control builtins that
// need the skill contract or a walk over state views (CONTRACT_SPEC §8, §10,
// §12, §14.1, §15). Each reads the request of the call in progress and
// answers with a decision; the guest checks its own arguments, relays the
// decision through the result factories and emits the effect. The contract
// library and the loops over state run here, natively, because the same
// work inside a wasm guest is an order of magnitude slower.

// builtinDecision is what a builtin.* service answers: one result for the guest to
// report, and on success the effect to emit. Reason and next texts are
// already in the request's locale.
type builtinDecision struct {
	Outcome string   `json:"outcome"` // SUCCESS, REJECTED or FAILED
	Code    abi.Code `json:"code,omitempty"`
	Text    string   `json:"text"`
	Next    string   `json:"next,omitempty"`
	Effect  string   `json:"effect,omitempty"`
	Payload any      `json:"payload,omitempty"`
	Data    any      `json:"data,omitempty"`
}

func (d builtinDecision) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("services: encode decision: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func builtinRejected(code abi.Code, text, next string) builtinDecision {
	return builtinDecision{Outcome: abi.OutcomeRejected.String(), Code: code, Text: text, Next: next}
}

func builtinSucceeded(text, effect string, payload any) builtinDecision {
	return builtinDecision{Outcome: abi.OutcomeSuccess.String(), Text: text, Effect: effect, Payload: payload}
}

// builtinToolError is the FAILED decision for a builtin whose runtime state is
// missing or broken (TOOL_OBSERVATION §5: not a rule the model broke).
func builtinToolError(l abi.Locale, tool, detail string) builtinDecision {
	return builtinDecision{Outcome: abi.OutcomeFailed.String(), Code: abi.ToolError,
		Text: abi.ToolError.Reason(l, "tool", tool, "detail", detail), Next: abi.NextFail.Text(l)}
}

// builtinService adapts a decision function to a service.
func builtinService(f func(*builtinCall) builtinDecision) Func {
	return func(req, _ []byte) ([]byte, error) {
		return f(newBuiltinCall(req)).encode()
	}
}

// builtinCall is one builtin call as the services see it.
type builtinCall struct {
	req  []byte
	l    abi.Locale
	tool string
	args gjson.Result
}

func newBuiltinCall(req []byte) *builtinCall {
	return &builtinCall{
		req:  req,
		l:    abi.ParseLocale(gjson.GetBytes(req, abi.FieldLocale).String()),
		tool: gjson.GetBytes(req, abi.FieldTool).String(),
		args: gjson.GetBytes(req, abi.FieldArgs),
	}
}

// arg returns a string argument, trimmed.
func (c *builtinCall) arg(name string) string { return strings.TrimSpace(c.args.Get(name).String()) }

// view decodes the state view granted as capability v into dst and reports
// whether it was present.
func (c *builtinCall) view(v abi.Capability, dst any) (bool, error) {
	r := gjson.GetBytes(c.req, abi.FieldState+"."+strings.ReplaceAll(string(v), ".", `\.`))
	if !r.Exists() || r.Type == gjson.Null {
		return false, nil
	}
	if err := json.Unmarshal([]byte(r.Raw), dst); err != nil {
		return false, fmt.Errorf("%s: %w", v, err)
	}
	return true, nil
}

// node returns state.node, or a FAILED decision when it is missing.
func (c *builtinCall) node() (*abi.NodeView, *builtinDecision) {
	var n abi.NodeView
	ok, err := c.view(abi.CapStateNode, &n)
	if err != nil {
		d := builtinToolError(c.l, c.tool, err.Error())
		return nil, &d
	}
	if !ok {
		d := builtinToolError(c.l, c.tool, c.text(btxNoState, "view", string(abi.CapStateNode)))
		return nil, &d
	}
	return &n, nil
}

// contract parses the skill contract of state.node. A node without one runs
// under the empty contract (every tool by the default rules of §1.3).
func (c *builtinCall) contract(n *abi.NodeView) (*contract.Contract, *builtinDecision) {
	ct, err := builtinParseContract(n.SkillKey, n.Contract)
	if err != nil {
		d := builtinToolError(c.l, c.tool, err.Error())
		return nil, &d
	}
	return ct, nil
}

// views decodes optional state views; a missing view stays zero.
func (c *builtinCall) views(pairs ...any) *builtinDecision {
	for i := 0; i+1 < len(pairs); i += 2 {
		if _, err := c.view(pairs[i].(abi.Capability), pairs[i+1]); err != nil {
			d := builtinToolError(c.l, c.tool, err.Error())
			return &d
		}
	}
	return nil
}

// Contracts are parsed once per (skill key, text): a builtin call would
// otherwise parse the same contract on every call of the node.
var builtinContractCache = struct {
	sync.Mutex
	m map[[32]byte]*contract.Contract
}{m: map[[32]byte]*contract.Contract{}}

const builtinContractCacheLimit = 1024

func builtinParseContract(skillKey string, raw json.RawMessage) (*contract.Contract, error) {
	src := bytes.TrimSpace(raw)
	if len(src) == 0 || string(src) == "null" {
		src = []byte("{}")
	}
	h := sha256.New()
	h.Write([]byte(skillKey))
	h.Write([]byte{0})
	h.Write(src)
	var key [32]byte
	h.Sum(key[:0])
	builtinContractCache.Lock()
	ct, ok := builtinContractCache.m[key]
	builtinContractCache.Unlock()
	if ok {
		return ct, nil
	}
	ct, _, err := contract.Parse(skillKey, src)
	if err != nil {
		return nil, err
	}
	builtinContractCache.Lock()
	if len(builtinContractCache.m) >= builtinContractCacheLimit {
		clear(builtinContractCache.m)
	}
	builtinContractCache.m[key] = ct
	builtinContractCache.Unlock()
	return ct, nil
}

// Texts of the builtin services that no error code or hint carries: success
// summaries and the details filled into a code's {detail}. zh-CN first.
type builtinTextID int

const (
	btxNoState builtinTextID = iota
	btxListSep
	btxClauseSep
	btxColon
	btxNone
	btxFollowUpOK
	btxApprovalOK
	btxFinishOK
	btxDelegateOK
	btxOutputOK
	btxStateOK
	btxEvidencePage
	btxFieldsNotAskable
	btxFieldsNeedQuery
	btxNoBusinessCall
	btxLastCallHasData
	btxVerbalConfirm
	btxEchoUser
	btxSourceUnknown
	btxSourceModel
	btxSourceNotAccepted
	btxSourceRefMissing
	btxEvidenceMissing
	btxEvidenceNotOK
	btxEvidencePathMissing
	btxEvidenceValueDiffers
	btxEvidenceNoValue
	btxNoConstant
	btxConstantDiffers
	btxUserValueMissing
	btxRefValueDiffers
	btxPriorMissing
	btxValueMissing
	btxAnyKey
	btxNotDelegatable
	btxDelegateSelf
	btxDelegateDepth
	btxPageRange
	btxOutputSourceBad
)

var builtinTexts = map[builtinTextID][2]string{
	btxNoState:              {"缺少运行态 {view}", "runtime state {view} is missing"},
	btxListSep:              {"、", ", "},
	btxClauseSep:            {"；", "; "},
	btxColon:                {"：", ": "},
	btxNone:                 {"无", "none"},
	btxFollowUpOK:           {"已向用户追问，节点挂起等待回答", "the question was sent to the user; the node waits for the answer"},
	btxApprovalOK:           {"已请求用户确认写操作 {tool}，节点挂起等待确认", "the user was asked to confirm write {tool}; the node waits for the answer"},
	btxFinishOK:             {"节点已完成", "the node is done"},
	btxDelegateOK:           {"已委派技能 {skill} 作为前置节点，前置节点结束后本节点继续", "skill {skill} was delegated as a pre-node; this node continues when it ends"},
	btxOutputOK:             {"已写入产出 {key}", "output {key} was written"},
	btxStateOK:              {"已写入便签 {key}", "scratch key {key} was written"},
	btxEvidencePage:         {"证据 {evidence} 的原始报文，第 {page}/{pages} 页", "raw payload of evidence {evidence}, page {page} of {pages}"},
	btxFieldsNotAskable:     {"字段 {fields} 不是本技能允许向用户询问的参数（可询问：{askable}）", "{fields} are not parameters this skill may ask the user for (askable: {askable})"},
	btxFieldsNeedQuery:      {"字段 {fields} 须来自查询结果，但本节点还没有非空的成功查询", "{fields} must come from query results, but this node has no successful non-empty query yet"},
	btxNoBusinessCall:       {"没有待补参数，且本节点还没有调用过业务工具", "no expected fields, and this node has not called a business tool yet"},
	btxLastCallHasData:      {"没有待补参数，且最近一次业务调用 {tool} 已成功返回数据", "no expected fields, and the last business builtinCall {tool} builtinSucceeded with data"},
	btxVerbalConfirm:        {"不能用追问口头确认写操作", "a write may not be confirmed verbally through a follow-up question"},
	btxEchoUser:             {"问题复述了用户刚说过的话", "the question repeats what the user just said"},
	btxSourceUnknown:        {"产出 {key} 的来源类型 {source} 不存在", "source type {source} of output {key} does not exist"},
	btxSourceModel:          {"产出 {key} 的来源类型不能是 MODEL", "the source type of output {key} may not be MODEL"},
	btxSourceNotAccepted:    {"产出 {key} 不接受来源类型 {source}", "output {key} does not accept source type {source}"},
	btxSourceRefMissing:     {"产出 {key} 缺少 sourceRef", "sourceRef of output {key} is missing"},
	btxEvidenceMissing:      {"产出 {key} 引用的证据 {ref} 不存在", "evidence {ref} cited by output {key} does not exist"},
	btxEvidenceNotOK:        {"产出 {key} 引用的证据 {ref} 不是业务成功的调用结果", "evidence {ref} cited by output {key} is not a successful call"},
	btxEvidencePathMissing:  {"证据 {ref} 中没有路径 {path}", "evidence {ref} has no path {path}"},
	btxEvidenceValueDiffers: {"产出 {key} 的值与证据 {ref} 中 {path} 处的值不一致", "the value of output {key} differs from the value at {path} in evidence {ref}"},
	btxEvidenceNoValue:      {"产出 {key} 的值不在证据 {ref} 的抽取内容中", "the value of output {key} is not among the extracted values of evidence {ref}"},
	btxNoConstant:           {"产出 {key} 没有配置 constant，不能用来源类型 CONTRACT", "output {key} has no constant, so source type CONTRACT cannot be used"},
	btxConstantDiffers:      {"产出 {key} 的值与契约常量不一致", "the value of output {key} differs from the contract constant"},
	btxUserValueMissing:     {"产出 {key} 的值不在用户最近的消息中", "the value of output {key} is not in the user's recent messages"},
	btxRefValueDiffers:      {"产出 {key} 的值与 {source} 中 {ref} 的值不一致", "the value of output {key} differs from {ref} in {source}"},
	btxPriorMissing:         {"产出 {key} 的值不是前情中任何实体的 id", "the value of output {key} is not the id of any prior entity"},
	btxValueMissing:         {"产出 {key} 缺少 value", "value of output {key} is missing"},
	btxAnyKey:               {"任意非平台字段名", "any key that is not a platform field name"},
	btxNotDelegatable:       {"该技能不可委派（可委派：{skills}）", "it is not delegatable (delegatable: {skills})"},
	btxDelegateSelf:         {"不能委派本节点自己的技能", "a node cannot builtinDelegate its own skill"},
	btxDelegateDepth:        {"已到委派层级上限 {max}", "the delegation depth limit {max} is reached"},
	btxPageRange:            {"page 超出范围（共 {pages} 页）", "page is out of range ({pages} pages)"},
	btxOutputSourceBad:      {"来源类型 {source} 不被接受（允许：{allowed}）", "source type {source} is not accepted (allowed: {allowed})"},
}

func (c *builtinCall) text(id builtinTextID, kv ...string) string {
	return builtinLocalText(c.l, id, kv...)
}

func builtinLocalText(l abi.Locale, id builtinTextID, kv ...string) string {
	t := builtinTexts[id]
	if l == abi.LocaleEN {
		return abi.Fill(t[1], kv...)
	}
	return abi.Fill(t[0], kv...)
}

// list joins items with the locale's list separator, or "无"/"none".
func (c *builtinCall) list(items []string) string {
	if len(items) == 0 {
		return c.text(btxNone)
	}
	return strings.Join(items, c.text(btxListSep))
}

// clauses joins two next-step texts into one.
func (c *builtinCall) clauses(a, b string) string { return a + c.text(btxClauseSep) + b }

// builtinNormalize lowercases s and drops white space, punctuation and symbols, for
// the spec's "normalised, blanks removed, lower case" comparisons (§5.3).
func builtinNormalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// builtinSameValue compares two JSON values: equal canonical forms, or two
// scalars with the same text (200 equals "200", as §6.1 compares).
func builtinSameValue(a, b gjson.Result) bool {
	if !a.Exists() || !b.Exists() {
		return false
	}
	if bytes.Equal(Canonical(a), Canonical(b)) {
		return true
	}
	if a.IsObject() || a.IsArray() || b.IsObject() || b.IsArray() || a.Type == gjson.Null || b.Type == gjson.Null {
		return false
	}
	return a.String() == b.String()
}

// builtinEmptyValue is a value finish treats as not written: null, a blank string,
// an empty array or object.
func builtinEmptyValue(v gjson.Result) bool {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return true
	case v.Type == gjson.String:
		return strings.TrimSpace(v.Str) == ""
	case v.IsArray():
		return len(v.Array()) == 0
	case v.IsObject():
		empty := true
		v.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
		return empty
	}
	return false
}

// builtinAllSources are the source types of §18 in the spec's order.
var builtinAllSources = []contract.SourceType{
	contract.SourceUser, contract.SourceEvidence, contract.SourceNodeOutput, contract.SourceShared,
	contract.SourceSession, contract.SourcePriorTask, contract.SourceModel, contract.SourceContract, contract.SourcePlatform,
}

// builtinAllowedSources is what an output accepts: its sources, or every source
// when none are configured; never MODEL (§8).
func builtinAllowedSources(o *contract.Output) []string {
	from := builtinAllSources
	if o != nil && len(o.Sources) > 0 {
		from = o.Sources
	}
	out := make([]string, 0, len(from))
	for _, s := range from {
		if s != contract.SourceModel && !slices.Contains(out, string(s)) {
			out = append(out, string(s))
		}
	}
	return out
}
