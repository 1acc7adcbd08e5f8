package services

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Services of the control builtins (plugins/builtins/control).
const (
	builtinServiceApproval = "builtin.approval"
	builtinServiceFollowUp = "builtin.follow_up"
	builtinServiceFinish   = "builtin.finish"
	builtinServiceDelegate = "builtin.delegate"
)

func init() {
	Register(builtinServiceApproval, builtinService(builtinApproval))
	Register(builtinServiceFollowUp, builtinService(builtinFollowUp))
	Register(builtinServiceFinish, builtinService(builtinFinish))
	Register(builtinServiceDelegate, builtinService(builtinDelegate))
}

// builtinApproval decides builtin_node_approval(summary, toolName) once the guest
// has seen a gated call (CONTRACT_SPEC §14.1, TOOL_OBSERVATION §7.3): the
// tool must be the gated one and a WRITE tool of the contract; the question
// is the summary followed by one "label：value" line per bound argument.
func builtinApproval(c *builtinCall) builtinDecision {
	var ap abi.ApprovalView
	if d := c.views(abi.CapStateApproval, &ap); d != nil {
		return *d
	}
	if ap.Gated == nil || ap.Gated.Tool == "" {
		return builtinRejected(abi.ApprovalNotGated, abi.ApprovalNotGated.Reason(c.l), abi.NextCallWriteFirst.Text(c.l))
	}
	g := ap.Gated
	if name := c.arg("toolName"); name != g.Tool {
		return builtinRejected(abi.ApprovalToolMismatch, abi.ApprovalToolMismatch.Reason(c.l, "tool", name, "gated", g.Tool),
			abi.NextApprovalMismatch.Text(c.l, "gated", g.Tool))
	}
	n, d := c.node()
	if d != nil {
		return *d
	}
	ct, d := c.contract(n)
	if d != nil {
		return *d
	}
	t := ct.Tool(g.Tool)
	if !t.IsWrite() {
		return builtinRejected(abi.WriteContractIncomplete, abi.WriteContractIncomplete.Reason(c.l, "tool", g.Tool), abi.NextCallWriteFirst.Text(c.l))
	}
	question := c.arg("summary")
	if lines := builtinApprovalDigest(c.l, t, gjson.ParseBytes(g.Args)); len(lines) > 0 {
		question += "\n" + strings.Join(lines, "\n")
	}
	return builtinSucceeded(c.text(btxApprovalOK, "tool", g.Tool), abi.EffectNodeSuspend, abi.NodeSuspend{
		Kind: abi.SuspendApproval, Question: question, Tool: g.Tool, Args: g.Args, ArgsDigest: g.ArgsDigest,
	})
}

// builtinApprovalDigest renders the bound arguments of a gated call as
// "label：value" lines, in the order of the arguments (§14.1): the label is
// the contract's args.<p>.label, else the parameter path; sensitive values
// are masked (builtinMask); parameters the contract binds from platform.*
// are left out (§11); null values are skipped. Array items are labelled with
// a 1-based index, "商品编码[2]". A parameter the contract lists is one line
// even when its value is an object or array (canonical JSON).
func builtinApprovalDigest(l abi.Locale, t *contract.Tool, args gjson.Result) []string {
	colon := builtinLocalText(l, btxColon)
	var lines []string
	var walk func(concrete, pattern string, index []int, v gjson.Result)
	walk = func(concrete, pattern string, index []int, v gjson.Result) {
		arg := t.Args[pattern]
		if arg != nil && arg.From != nil && arg.From.Kind == contract.ExprPlatform {
			return
		}
		switch {
		case arg == nil && v.IsObject():
			v.ForEach(func(k, item gjson.Result) bool {
				walk(builtinJoin(concrete, k.Str), builtinJoin(pattern, k.Str), index, item)
				return true
			})
			return
		case arg == nil && v.IsArray():
			i := 0
			v.ForEach(func(_, item gjson.Result) bool {
				walk(concrete+"["+strconv.Itoa(i)+"]", pattern+"[]", append(slices.Clone(index), i), item)
				i++
				return true
			})
			return
		case v.Type == gjson.Null:
			return
		}
		label := concrete
		if arg != nil && arg.Label != "" {
			label = arg.Label
			for _, i := range index {
				label += "[" + strconv.Itoa(i+1) + "]"
			}
		}
		text := v.String()
		if v.IsObject() || v.IsArray() {
			text = string(Canonical(v))
		}
		if arg != nil && arg.Sensitive {
			text = builtinMask(text)
		}
		lines = append(lines, label+colon+text)
	}
	args.ForEach(func(k, v gjson.Result) bool {
		walk(k.Str, k.Str, nil, v)
		return true
	})
	return lines
}

func builtinJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// builtinMask masks a sensitive value for approval texts: the first 3 and
// last 4 characters stay ("13812345678" → "138****5678"); values of 7
// characters or fewer, which that rule would show whole, become "****".
func builtinMask(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= 7 {
		return "****"
	}
	r := []rune(s)
	return string(r[:3]) + "****" + string(r[n-4:])
}

// builtinFollowUp decides builtin_node_follow_up(question, expectedFields?,
// suggestions?) (§12, TOOL_OBSERVATION §9 scenarios 4 and 5).
func builtinFollowUp(c *builtinCall) builtinDecision {
	n, d := c.node()
	if d != nil {
		return *d
	}
	ct, d := c.contract(n)
	if d != nil {
		return *d
	}
	var (
		fu   abi.FollowUpView
		ap   abi.ApprovalView
		conv abi.ConversationView
		ev   abi.EvidenceView
	)
	if d := c.views(abi.CapStateFollowUp, &fu, abi.CapStateApproval, &ap, abi.CapStateConversation, &conv, abi.CapStateEvidence, &ev); d != nil {
		return *d
	}
	question := c.arg("question")
	var fields, suggestions []string
	for _, f := range c.args.Get("expectedFields").Array() {
		if s := strings.TrimSpace(f.String()); s != "" && !slices.Contains(fields, s) {
			fields = append(fields, s)
		}
	}
	for _, s := range c.args.Get("suggestions").Array() {
		suggestions = append(suggestions, s.String())
	}

	// Asked again verbatim after the user answered it in this turn.
	answered := fu.Answered
	if fu.Current != nil && fu.Current.Answer != "" {
		answered = append([]abi.FollowUp{*fu.Current}, answered...)
	}
	for _, a := range answered {
		if builtinNormalize(a.Question) == builtinNormalize(question) && builtinSameFieldSet(a.ExpectedFields, fields) {
			return builtinRejected(abi.FollowUpAnswered, abi.FollowUpAnswered.Reason(c.l, "answer", a.Answer), abi.NextUseAnswer.Text(c.l))
		}
	}

	// Scenario 5: confirming a write verbally, or echoing the user.
	ungrounded := func(detail string, next abi.Hint, kv ...string) builtinDecision {
		return builtinRejected(abi.FollowUpUngrounded, abi.FollowUpUngrounded.Reason(c.l, "detail", detail), next.Text(c.l, kv...))
	}
	if builtinVerbalConfirmation(question, ct, ap.Gated != nil, len(fields) > 0) {
		return ungrounded(c.text(btxVerbalConfirm), abi.NextWriteDirectly)
	}
	if len(fields) == 0 && builtinEchoesUser(question, conv.UserMessages) {
		return ungrounded(c.text(btxEchoUser), abi.NextWriteDirectly)
	}

	if len(fields) > 0 {
		var notAskable, needQuery []string
		callTool := ""
		queried := builtinHasNonEmptyQuery(ev, n.NodeID)
		for _, f := range fields {
			user, evidence, tool := builtinFieldSources(ct, f)
			switch {
			case user:
			case evidence && queried:
			case evidence:
				needQuery = append(needQuery, f)
				if callTool == "" {
					callTool = tool
				}
			default:
				notAskable = append(notAskable, f)
			}
		}
		if len(notAskable) > 0 {
			return ungrounded(c.text(btxFieldsNotAskable, "fields", "["+c.list(notAskable)+"]", "askable", c.list(builtinAskableFields(ct))),
				abi.NextChangeStrategy)
		}
		if len(needQuery) > 0 {
			detail := c.text(btxFieldsNeedQuery, "fields", "["+c.list(needQuery)+"]")
			if callTool != "" {
				return ungrounded(detail, abi.NextCallTool, "tool", callTool, "param", c.list(needQuery))
			}
			return ungrounded(detail, abi.NextChangeStrategy)
		}
	} else {
		lb := n.LastBusiness
		switch {
		case lb == nil:
			return ungrounded(c.text(btxNoBusinessCall), abi.NextDoBusiness)
		case lb.Empty || !lb.BusinessOK || lb.Outcome == abi.OutcomeFailed:
		default:
			return ungrounded(c.text(btxLastCallHasData, "tool", lb.Tool), abi.NextChangeStrategy)
		}
	}
	return builtinSucceeded(c.text(btxFollowUpOK), abi.EffectNodeSuspend, abi.NodeSuspend{
		Kind: abi.SuspendFollowUp, Question: question, ExpectedFields: fields, Suggestions: suggestions,
	})
}

func builtinSameFieldSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// builtinFieldSources reports whether some parameter of the skill's tools matching
// field (by path or leaf name) accepts USER, or EVIDENCE, and the missing.tool
// of the first EVIDENCE one.
func builtinFieldSources(ct *contract.Contract, field string) (user, evidence bool, tool string) {
	for _, tn := range ct.ToolNames() {
		t := ct.Tools[tn]
		for _, p := range t.ArgPaths() {
			a := t.Args[p]
			if p != field && a.Path.Leaf() != field {
				continue
			}
			if slices.Contains(a.Sources, contract.SourceUser) {
				user = true
			}
			if slices.Contains(a.Sources, contract.SourceEvidence) {
				if !evidence && a.Missing.Action == contract.MissingCallTool {
					tool = a.Missing.Tool
				}
				evidence = true
			}
		}
	}
	return user, evidence, tool
}

// builtinAskableFields lists the parameters that accept USER, for the rejection text.
func builtinAskableFields(ct *contract.Contract) []string {
	var out []string
	for _, tn := range ct.ToolNames() {
		t := ct.Tools[tn]
		for _, p := range t.ArgPaths() {
			if slices.Contains(t.Args[p].Sources, contract.SourceUser) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// builtinHasNonEmptyQuery reports whether the node has a successful call with data.
func builtinHasNonEmptyQuery(ev abi.EvidenceView, nodeID string) bool {
	for _, it := range ev.Items {
		if (it.NodeID == "" || it.NodeID == nodeID) && it.Status == abi.OutcomeSuccess && it.BusinessOK && !it.Empty {
			return true
		}
	}
	return false
}

var (
	builtinConfirmWords = []string{"确认", "确定", "是否继续", "是否要", "要不要", "可以吗", "同意", "confirm", "are you sure", "shall i", "should i", "ok to", "go ahead", "proceed"}
	builtinWriteVerbs   = []string{"创建", "新建", "删除", "修改", "更新", "提交", "保存", "发布", "下单", "支付", "发送", "开通",
		"create", "delete", "update", "modify", "submit", "save", "publish", "send", "pay", "place"}
)

// builtinVerbalConfirmation reports whether a follow-up question asks the user to
// confirm a write (TOOL_OBSERVATION §9 scenario 5): it uses a confirmation
// phrase, and either a write is held by the gate or, for a question without
// expected fields, it names a write tool the contract gates (its name or
// label) or uses a write verb while the contract has such a tool. Questions
// that ask for field values while nothing is gated are not confirmations.
func builtinVerbalConfirmation(question string, ct *contract.Contract, gated, hasFields bool) bool {
	q := strings.ToLower(question)
	if !builtinContainsAny(q, builtinConfirmWords) {
		return false
	}
	if gated {
		return true
	}
	if hasFields {
		return false
	}
	var gatedTools bool
	for _, tn := range ct.WriteTools() {
		t := ct.Tools[tn]
		if !t.NeedsConfirm() {
			continue
		}
		gatedTools = true
		if strings.Contains(q, strings.ToLower(tn)) || (t.Label != "" && strings.Contains(q, strings.ToLower(t.Label))) {
			return true
		}
	}
	return gatedTools && builtinContainsAny(q, builtinWriteVerbs)
}

func builtinContainsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// builtinEchoesUser reports whether a question repeats a recent user message
// (scenario 5): after normalisation, the question contains a message of at
// least 4 characters that makes up at least 60% of it, or a message contains
// the whole question of at least 4 characters.
func builtinEchoesUser(question string, messages []string) bool {
	q := builtinNormalize(question)
	nq := utf8.RuneCountInString(q)
	if nq == 0 {
		return false
	}
	for _, m := range messages {
		u := builtinNormalize(m)
		nu := utf8.RuneCountInString(u)
		if nu >= 4 && strings.Contains(q, u) && nu*10 >= nq*6 {
			return true
		}
		if nq >= 4 && strings.Contains(u, q) {
			return true
		}
	}
	return false
}

// builtinCitation is the syntax an output uses to cite evidence: [ev:<id>].
var builtinCitation = regexp.MustCompile(`\[ev:([^\]\s]+)\]`)

// builtinCitations returns the evidence IDs an output cites as [ev:<id>], in order
// of first appearance, without duplicates.
func builtinCitations(output string) []string {
	var out []string
	for _, m := range builtinCitation.FindAllStringSubmatch(output, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// builtinFinish decides builtin_node_finish(output) after the guest has checked
// that output is not empty: the checks of CONTRACT_SPEC §10.2 in order, then
// the citations (FAILURES_AND_EVIDENCE §5).
func builtinFinish(c *builtinCall) builtinDecision {
	n, d := c.node()
	if d != nil {
		return *d
	}
	ct, d := c.contract(n)
	if d != nil {
		return *d
	}
	var (
		ledger abi.LedgerView
		ev     abi.EvidenceView
	)
	if d := c.views(abi.CapStateLedger, &ledger, abi.CapStateEvidence, &ev); d != nil {
		return *d
	}
	// 2. No unsettled write of this node.
	for _, e := range ledger.Entries {
		if e.State.Open() && (e.NodeID == "" || e.NodeID == n.NodeID) {
			return builtinRejected(abi.FinishOpenEvidence, abi.FinishOpenEvidence.Reason(c.l, "tool", e.Tool, "state", string(e.State)),
				abi.NextSettleWrite.Text(c.l, "tool", e.Tool))
		}
	}
	// 3. Required outputs written, not empty, from a legal source.
	for _, key := range ct.OutputNames() {
		o := ct.Outputs[key]
		if !o.Required {
			continue
		}
		allowed := builtinAllowedSources(o)
		next := abi.NextOutputSet.Text(c.l, "keys", key, "sources", c.list(allowed))
		w, ok := n.Outputs[key]
		if !ok {
			return builtinRejected(abi.FinishOutputMissing, abi.FinishOutputMissing.Reason(c.l, "key", key), next)
		}
		v := gjson.ParseBytes(w.Value)
		if builtinEmptyValue(v) {
			return builtinRejected(abi.FinishOutputEmpty, abi.FinishOutputEmpty.Reason(c.l, "key", key), next)
		}
		bad := !slices.Contains(allowed, w.SourceType)
		if !bad && w.SourceType == string(contract.SourceContract) {
			bad = o.Constant == nil || !builtinSameValue(v, gjson.ParseBytes(o.Constant))
		}
		if bad {
			detail := c.text(btxOutputSourceBad, "source", w.SourceType, "allowed", c.list(allowed))
			if w.SourceType == string(contract.SourceContract) && slices.Contains(allowed, w.SourceType) {
				detail = c.text(btxConstantDiffers, "key", key)
			}
			return builtinRejected(abi.FinishOutputSource, abi.FinishOutputSource.Reason(c.l, "key", key, "detail", detail), next)
		}
	}
	// 4. The completion target succeeded here or in a delegated pre-node.
	if n.Target != "" {
		if !slices.Contains(n.DoneTools, n.Target) {
			return builtinRejected(abi.FinishNeedTarget, abi.FinishNeedTarget.Reason(c.l, "tool", n.Target), abi.NextDoTarget.Text(c.l, "tool", n.Target))
		}
	} else if len(ct.Outputs) == 0 && len(n.ToolNames) > 0 && len(n.DoneTools) == 0 && !builtinCompletedHere(ev, n.NodeID) {
		// 5. Without target or outputs, some business call completed.
		return builtinRejected(abi.FinishNeedBusiness, abi.FinishNeedBusiness.Reason(c.l), abi.NextDoBusiness.Text(c.l))
	}
	// Citations must name known evidence.
	output := c.arg("output")
	for _, id := range builtinCitations(output) {
		if !slices.ContainsFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == id }) {
			return builtinRejected(abi.CitationInvalid, abi.CitationInvalid.Reason(c.l, "evidence", id), abi.NextCiteEvidence.Text(c.l))
		}
	}
	return builtinSucceeded(c.text(btxFinishOK), abi.EffectNodeFinish, abi.NodeFinish{Output: output})
}

// builtinCompletedHere reports whether the node has evidence of a completed call:
// SUCCESS and business ok, an empty result included (§10.2).
func builtinCompletedHere(ev abi.EvidenceView, nodeID string) bool {
	for _, it := range ev.Items {
		if it.NodeID == nodeID && it.Status == abi.OutcomeSuccess && it.BusinessOK {
			return true
		}
	}
	return false
}

// builtinDefaultDelegateDepth is state.delegate-max-depth's default (§15).
const builtinDefaultDelegateDepth = 2

// builtinDelegate decides builtin_node_delegate(skillKey, objective?) (§15). The
// skills of the agent are read from state.node.skills when the loop supplies
// them; without that list, a skill that is not delegatable is reported as
// not found, because the node cannot see it.
func builtinDelegate(c *builtinCall) builtinDecision {
	n, d := c.node()
	if d != nil {
		return *d
	}
	skill, objective := c.arg("skillKey"), c.arg("objective")
	notFound := builtinRejected(abi.SkillNotFound, abi.SkillNotFound.Reason(c.l, "skill", skill), abi.NextDelegate.Text(c.l))
	forbidden := func(detail string) builtinDecision {
		return builtinRejected(abi.DelegateForbidden, abi.DelegateForbidden.Reason(c.l, "skill", skill, "detail", detail), abi.NextDelegate.Text(c.l))
	}
	var known []string
	for _, s := range gjson.GetBytes(c.req, abi.FieldState+`.state\.node.skills`).Array() {
		known = append(known, s.String())
	}
	delegatable := slices.Contains(n.Delegatable, skill)
	switch {
	case skill == n.SkillKey && skill != "":
		return forbidden(c.text(btxDelegateSelf))
	case !delegatable && !slices.Contains(known, skill):
		return notFound
	case !delegatable:
		return forbidden(c.text(btxNotDelegatable, "skills", c.list(n.Delegatable)))
	}
	max := n.DelegateMaxDepth
	if max <= 0 {
		max = builtinDefaultDelegateDepth
	}
	if n.Depth >= max {
		return forbidden(c.text(btxDelegateDepth, "max", strconv.Itoa(max)))
	}
	for _, p := range n.Delegations {
		if p.SkillKey == skill && strings.TrimSpace(p.Objective) == objective &&
			(p.Status == "FAILED" || p.Status == "CANCELLED" || p.Status == "SKIPPED") {
			return builtinRejected(abi.DelegateRepeated, abi.DelegateRepeated.Reason(c.l, "skill", skill), abi.NextDelegate.Text(c.l))
		}
	}
	return builtinSucceeded(c.text(btxDelegateOK, "skill", skill), abi.EffectNodeDelegate, abi.NodeDelegate{SkillKey: skill, Objective: objective})
}
