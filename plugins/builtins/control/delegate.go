package control

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
)

// defaultDelegateDepth is state.delegate-max-depth's default (§15).
const defaultDelegateDepth = 2

// delegate decides builtin_node_delegate(skillKey, objective?) (§15). The
// skills of the agent are read from state.node.skills when the loop supplies
// them; without that list, a skill that is not delegatable is reported as
// not found, because the node cannot see it.
func delegate(c *rules.Call) rules.Decision {
	n, d := c.Node("{skillKey,depth,delegatable,delegateMaxDepth,delegations}")
	if d != nil {
		return *d
	}
	skill, objective := c.Arg("skillKey"), c.Arg("objective")
	notFound := rules.Rejected(abi.SkillNotFound, abi.SkillNotFound.Reason(c.L, "skill", skill), abi.NextDelegate.Text(c.L))
	forbidden := func(detail string) rules.Decision {
		return rules.Rejected(abi.DelegateForbidden, abi.DelegateForbidden.Reason(c.L, "skill", skill, "detail", detail), abi.NextDelegate.Text(c.L))
	}
	var known []string
	for _, s := range c.Get(guest.StatePath(abi.CapStateNode, "skills")).Array() {
		known = append(known, s.String())
	}
	delegatable := slices.Contains(n.Delegatable, skill)
	switch {
	case skill == n.SkillKey && skill != "":
		return forbidden(c.Text(txDelegateSelf))
	case !delegatable && !slices.Contains(known, skill):
		return notFound
	case !delegatable:
		return forbidden(c.Text(txNotDelegatable, "skills", c.List(n.Delegatable)))
	}
	max := n.DelegateMaxDepth
	if max <= 0 {
		max = defaultDelegateDepth
	}
	if n.Depth >= max {
		return forbidden(c.Text(txDelegateDepth, "max", strconv.Itoa(max)))
	}
	for _, p := range n.Delegations {
		if p.SkillKey == skill && strings.TrimSpace(p.Objective) == objective &&
			(p.Status == "FAILED" || p.Status == "CANCELLED" || p.Status == "SKIPPED") {
			return rules.Rejected(abi.DelegateRepeated, abi.DelegateRepeated.Reason(c.L, "skill", skill), abi.NextDelegate.Text(c.L))
		}
	}
	return rules.Succeeded(c.Text(txDelegateOK, "skill", skill), abi.EffectNodeDelegate, abi.NodeDelegate{SkillKey: skill, Objective: objective})
}
