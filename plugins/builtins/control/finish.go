package control

import (
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

// citations returns the evidence IDs an output cites as [ev:<id>], in order
// of first appearance, without duplicates. An id is one or more characters
// other than ']' and ASCII white space; the scan finds what the regular
// expression \[ev:([^\]\s]+)\] finds, without a regexp engine in the guest.
func citations(output string) []string {
	var out []string
	for i := 0; ; {
		j := strings.Index(output[i:], "[ev:")
		if j < 0 {
			return out
		}
		start := i + j + len("[ev:")
		end := start
		for end < len(output) && !citationStop(output[end]) {
			end++
		}
		if end > start && end < len(output) && output[end] == ']' {
			if id := output[start:end]; !slices.Contains(out, id) {
				out = append(out, id)
			}
			i = end + 1
			continue
		}
		i += j + 1
	}
}

// citationStop reports whether b ends a citation's id: ']' or what RE2's \s
// matches.
func citationStop(b byte) bool {
	switch b {
	case ']', ' ', '\t', '\n', '\f', '\r':
		return true
	}
	return false
}

// finish decides builtin_node_finish(output) after the guest has checked
// that output is not empty: the checks of CONTRACT_SPEC §10.2 in order, then
// the citations (FAILURES_AND_EVIDENCE §5), then the build's extra rules.
func finish(c *rules.Call, extra []FinishRule) rules.Decision {
	// The first-party gate reads only the fields it needs; extra rules see
	// the whole views.
	nodePart, nodeMore := "{nodeId,skillKey,outputs,target,doneTools}", []string{"{nodeId,toolNames}"}
	ledgerPart := "{entries:entries.#.{tool,state,nodeId}}"
	evidencePart := "{items:items.#.{id,nodeId,status,businessOk}}"
	if len(extra) > 0 {
		nodePart, nodeMore, ledgerPart, evidencePart = "", nil, "", ""
	}
	n, d := c.Node(nodePart, nodeMore...)
	if d != nil {
		return *d
	}
	ct, d := c.Contract(n)
	if d != nil {
		return *d
	}
	var (
		ledger abi.LedgerView
		ev     abi.EvidenceView
	)
	if d := c.Part(abi.CapStateLedger, ledgerPart, &ledger); d != nil {
		return *d
	}
	if d := c.Part(abi.CapStateEvidence, evidencePart, &ev); d != nil {
		return *d
	}
	// 2. No unsettled write of this node.
	for _, e := range ledger.Entries {
		if e.State.Open() && (e.NodeID == "" || e.NodeID == n.NodeID) {
			return rules.Rejected(abi.FinishOpenEvidence, abi.FinishOpenEvidence.Reason(c.L, "tool", e.Tool, "state", string(e.State)),
				abi.NextSettleWrite.Text(c.L, "tool", e.Tool))
		}
	}
	// 3. Required outputs written, not empty, from a legal source.
	for _, key := range ct.OutputNames() {
		o := ct.Outputs[key]
		if !o.Required {
			continue
		}
		allowed := rules.AllowedSources(o)
		// The next step is filled only for a refusal: filling texts is
		// costly inside the guest.
		next := func() string { return abi.NextOutputSet.Text(c.L, "keys", key, "sources", c.List(allowed)) }
		w, ok := n.Outputs[key]
		if !ok {
			return rules.Rejected(abi.FinishOutputMissing, abi.FinishOutputMissing.Reason(c.L, "key", key), next())
		}
		v := gjson.ParseBytes(w.Value)
		if rules.EmptyValue(v) {
			return rules.Rejected(abi.FinishOutputEmpty, abi.FinishOutputEmpty.Reason(c.L, "key", key), next())
		}
		bad := !slices.Contains(allowed, w.SourceType)
		if !bad && w.SourceType == string(contract.SourceContract) {
			bad = o.Constant == nil || !rules.SameValue(v, gjson.ParseBytes(o.Constant))
		}
		if bad {
			detail := c.Text(txOutputSourceBad, "source", w.SourceType, "allowed", c.List(allowed))
			if w.SourceType == string(contract.SourceContract) && slices.Contains(allowed, w.SourceType) {
				detail = c.Text(rules.ConstantDiffers, "key", key)
			}
			return rules.Rejected(abi.FinishOutputSource, abi.FinishOutputSource.Reason(c.L, "key", key, "detail", detail), next())
		}
	}
	// 4. The completion target succeeded here or in a delegated pre-node.
	if n.Target != "" {
		if !slices.Contains(n.DoneTools, n.Target) {
			return rules.Rejected(abi.FinishNeedTarget, abi.FinishNeedTarget.Reason(c.L, "tool", n.Target), abi.NextDoTarget.Text(c.L, "tool", n.Target))
		}
	} else if len(ct.Outputs) == 0 && len(n.ToolNames) > 0 && len(n.DoneTools) == 0 && !completedHere(ev, n.NodeID) {
		// 5. Without target or outputs, some business call completed.
		return rules.Rejected(abi.FinishNeedBusiness, abi.FinishNeedBusiness.Reason(c.L), abi.NextDoBusiness.Text(c.L))
	}
	// Citations must name known evidence.
	output := c.Arg("output")
	cites := citations(output)
	for _, id := range cites {
		if !slices.ContainsFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == id }) {
			return rules.Rejected(abi.CitationInvalid, abi.CitationInvalid.Reason(c.L, "evidence", id), abi.NextCiteEvidence.Text(c.L))
		}
	}
	if len(extra) > 0 {
		f := &FinishCheck{Locale: c.L, Output: output, Cites: cites, Node: n, Contract: ct, Ledger: ledger, Evidence: ev}
		for _, rule := range extra {
			if r := rule(f); r != nil {
				return rules.Rejected(r.Code, r.Reason, r.Next)
			}
		}
	}
	// abi.NodeFinish, encoded without reflection.
	payload := rules.AppendString(append(make([]byte, 0, len(output)+16), `{"output":`...), output)
	return rules.Succeeded(c.Text(txFinishOK), abi.EffectNodeFinish, append(payload, '}'))
}

// completedHere reports whether the node has evidence of a completed call:
// SUCCESS and business ok, an empty result included (§10.2).
func completedHere(ev abi.EvidenceView, nodeID string) bool {
	for _, it := range ev.Items {
		if it.NodeID == nodeID && it.Status == abi.OutcomeSuccess && it.BusinessOK {
			return true
		}
	}
	return false
}
