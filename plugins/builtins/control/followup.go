package control

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
)

// followUp decides builtin_node_follow_up(question, expectedFields?,
// suggestions?) (§12, TOOL_OBSERVATION §9 scenarios 4 and 5).
func followUp(c *rules.Call) rules.Decision {
	n, d := c.Node("{nodeId,skillKey,lastBusiness}")
	if d != nil {
		return *d
	}
	ct, d := c.Contract(n)
	if d != nil {
		return *d
	}
	var (
		fu   abi.FollowUpView
		ap   abi.ApprovalView
		conv abi.ConversationView
		ev   abi.EvidenceView
	)
	if d := c.Views(abi.CapStateFollowUp, &fu, abi.CapStateApproval, &ap, abi.CapStateConversation, &conv); d != nil {
		return *d
	}
	if d := c.Part(abi.CapStateEvidence, "{items:items.#.{nodeId,status,businessOk,empty}}", &ev); d != nil {
		return *d
	}
	question := c.Arg("question")
	var fields, suggestions []string
	for _, f := range c.ArgValue("expectedFields").Array() {
		if s := strings.TrimSpace(f.String()); s != "" && !slices.Contains(fields, s) {
			fields = append(fields, s)
		}
	}
	for _, s := range c.ArgValue("suggestions").Array() {
		suggestions = append(suggestions, s.String())
	}

	// Asked again verbatim after the user answered it in this turn.
	answered := fu.Answered
	if fu.Current != nil && fu.Current.Answer != "" {
		answered = append([]abi.FollowUp{*fu.Current}, answered...)
	}
	for _, a := range answered {
		if rules.Normalize(a.Question) == rules.Normalize(question) && sameFieldSet(a.ExpectedFields, fields) {
			return rules.Rejected(abi.FollowUpAnswered, abi.FollowUpAnswered.Reason(c.L, "answer", a.Answer), abi.NextUseAnswer.Text(c.L))
		}
	}

	// Scenario 5: confirming a write verbally, or echoing the user.
	ungrounded := func(detail string, next abi.Hint, kv ...string) rules.Decision {
		return rules.Rejected(abi.FollowUpUngrounded, abi.FollowUpUngrounded.Reason(c.L, "detail", detail), next.Text(c.L, kv...))
	}
	if verbalConfirmation(question, ct, ap.Gated != nil, len(fields) > 0) {
		return ungrounded(c.Text(txVerbalConfirm), abi.NextWriteDirectly)
	}
	if len(fields) == 0 && echoesUser(question, conv.UserMessages) {
		return ungrounded(c.Text(txEchoUser), abi.NextWriteDirectly)
	}

	if len(fields) > 0 {
		var notAskable, needQuery []string
		callTool := ""
		queried := hasNonEmptyQuery(ev, n.NodeID)
		for _, f := range fields {
			user, evidence, tool := fieldSources(ct, f)
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
			return ungrounded(c.Text(txFieldsNotAskable, "fields", "["+c.List(notAskable)+"]", "askable", c.List(askableFields(ct))),
				abi.NextChangeStrategy)
		}
		if len(needQuery) > 0 {
			detail := c.Text(txFieldsNeedQuery, "fields", "["+c.List(needQuery)+"]")
			if callTool != "" {
				return ungrounded(detail, abi.NextCallTool, "tool", callTool, "param", c.List(needQuery))
			}
			return ungrounded(detail, abi.NextChangeStrategy)
		}
	} else {
		lb := n.LastBusiness
		switch {
		case lb == nil:
			return ungrounded(c.Text(txNoBusinessCall), abi.NextDoBusiness)
		case lb.Empty || !lb.BusinessOK || lb.Outcome == abi.OutcomeFailed:
		default:
			return ungrounded(c.Text(txLastCallHasData, "tool", lb.Tool), abi.NextChangeStrategy)
		}
	}
	return rules.Succeeded(c.Text(txFollowUpOK), abi.EffectNodeSuspend, abi.NodeSuspend{
		Kind: abi.SuspendFollowUp, Question: question, ExpectedFields: fields, Suggestions: suggestions,
	})
}

func sameFieldSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// fieldSources reports whether some parameter of the skill's tools matching
// field (by path or leaf name) accepts USER, or EVIDENCE, and the missing.tool
// of the first EVIDENCE one.
func fieldSources(ct *contract.Contract, field string) (user, evidence bool, tool string) {
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

// askableFields lists the parameters that accept USER, for the rejection text.
func askableFields(ct *contract.Contract) []string {
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

// hasNonEmptyQuery reports whether the node has a successful call with data.
func hasNonEmptyQuery(ev abi.EvidenceView, nodeID string) bool {
	for _, it := range ev.Items {
		if (it.NodeID == "" || it.NodeID == nodeID) && it.Status == abi.OutcomeSuccess && it.BusinessOK && !it.Empty {
			return true
		}
	}
	return false
}

var (
	confirmWords = []string{"确认", "确定", "是否继续", "是否要", "要不要", "可以吗", "同意", "confirm", "are you sure", "shall i", "should i", "ok to", "go ahead", "proceed"}
	writeVerbs   = []string{"创建", "新建", "删除", "修改", "更新", "提交", "保存", "发布", "下单", "支付", "发送", "开通",
		"create", "delete", "update", "modify", "submit", "save", "publish", "send", "pay", "place"}
)

// verbalConfirmation reports whether a follow-up question asks the user to
// confirm a write (TOOL_OBSERVATION §9 scenario 5): it uses a confirmation
// phrase, and either a write is held by the gate or, for a question without
// expected fields, it names a write tool the contract gates (its name or
// label) or uses a write verb while the contract has such a tool. Questions
// that ask for field values while nothing is gated are not confirmations.
func verbalConfirmation(question string, ct *contract.Contract, gated, hasFields bool) bool {
	q := strings.ToLower(question)
	if !containsAny(q, confirmWords) {
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
	return gatedTools && containsAny(q, writeVerbs)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// echoesUser reports whether a question repeats a recent user message
// (scenario 5): after normalisation, the question contains a message of at
// least 4 characters that makes up at least 60% of it, or a message contains
// the whole question of at least 4 characters.
func echoesUser(question string, messages []string) bool {
	q := rules.Normalize(question)
	nq := utf8.RuneCountInString(q)
	if nq == 0 {
		return false
	}
	for _, m := range messages {
		u := rules.Normalize(m)
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
