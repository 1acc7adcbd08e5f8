package control

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

// approval decides builtin_node_approval(summary, toolName) once the guest
// has seen a gated call (CONTRACT_SPEC §14.1, TOOL_OBSERVATION §7.3): the
// tool must be the gated one and a WRITE tool of the contract; the question
// is the summary followed by one "label：value" line per bound argument.
func approval(c *rules.Call) rules.Decision {
	var ap abi.ApprovalView
	if d := c.Views(abi.CapStateApproval, &ap); d != nil {
		return *d
	}
	if ap.Gated == nil || ap.Gated.Tool == "" {
		return rules.Rejected(abi.ApprovalNotGated, abi.ApprovalNotGated.Reason(c.L), abi.NextCallWriteFirst.Text(c.L))
	}
	g := ap.Gated
	if name := c.Arg("toolName"); name != g.Tool {
		return rules.Rejected(abi.ApprovalToolMismatch, abi.ApprovalToolMismatch.Reason(c.L, "tool", name, "gated", g.Tool),
			abi.NextApprovalMismatch.Text(c.L, "gated", g.Tool))
	}
	n, d := c.Node("{nodeId,skillKey}")
	if d != nil {
		return *d
	}
	ct, d := c.Contract(n)
	if d != nil {
		return *d
	}
	t := ct.Tool(g.Tool)
	if !t.IsWrite() {
		return rules.Rejected(abi.WriteContractIncomplete, abi.WriteContractIncomplete.Reason(c.L, "tool", g.Tool), abi.NextCallWriteFirst.Text(c.L))
	}
	question := c.Arg("summary")
	summary := approvalDigest(t, gjson.ParseBytes(g.Args))
	colon := rules.Colon.In(c.L)
	for _, l := range summary {
		question += "\n" + l.Label + colon + l.Value
	}
	return rules.Succeeded(c.Text(txApprovalOK, "tool", g.Tool), abi.EffectNodeSuspend, abi.NodeSuspend{
		Kind: abi.SuspendApproval, Question: question, Tool: g.Tool, Args: g.Args, ArgsDigest: g.ArgsDigest, Summary: summary,
	})
}

// approvalDigest renders the bound arguments of a gated call as label and
// value lines ("label：value" in the question), in the order of the
// arguments (§14.1): the label is
// the contract's args.<p>.label, else the parameter path; sensitive values
// are masked (mask); parameters the contract binds from platform.*
// are left out (§11); null values are skipped. Array items are labelled with
// a 1-based index, "商品编码[2]". A parameter the contract lists is one line
// even when its value is an object or array (canonical JSON).
func approvalDigest(t *contract.Tool, args gjson.Result) []abi.ArgLine {
	var lines []abi.ArgLine
	var walk func(concrete, pattern string, index []int, v gjson.Result)
	walk = func(concrete, pattern string, index []int, v gjson.Result) {
		arg := t.Args[pattern]
		if arg != nil && arg.From != nil && arg.From.Kind == contract.ExprPlatform {
			return
		}
		switch {
		case arg == nil && v.IsObject():
			v.ForEach(func(k, item gjson.Result) bool {
				walk(join(concrete, k.Str), join(pattern, k.Str), index, item)
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
			text = string(canonical.JSON(v))
		}
		if arg != nil && arg.Sensitive {
			text = mask(text)
		}
		lines = append(lines, abi.ArgLine{Label: label, Value: text})
	}
	args.ForEach(func(k, v gjson.Result) bool {
		walk(k.Str, k.Str, nil, v)
		return true
	})
	return lines
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// mask masks a sensitive value for approval texts: the first 3 and
// last 4 characters stay ("13812345678" → "138****5678"); values of 7
// characters or fewer, which that rule would show whole, become "****".
func mask(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= 7 {
		return "****"
	}
	r := []rune(s)
	return string(r[:3]) + "****" + string(r[n-4:])
}
