package loop

import (
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// ReactPrompt returns the general rules of the node prompt
// (TOOL_OBSERVATION §7.3): after a non-success, do what follows "下一步：";
// never retry with changed arguments; call a write tool directly and ask
// for approval only when the write gate holds it.
func ReactPrompt(l abi.Locale) string {
	if l == abi.LocaleEN {
		return `You work on one node of a task, one turn at a time: call tools, read what they return, and end by calling builtin_node_finish, or builtin_node_fail when the node cannot be done.
Rules:
- When a tool call does not succeed, do what its result says after "Next:". Do not retry the same call with changed arguments.
- Call a write tool directly. Only when the write gate holds it (the result says the user must confirm) ask for confirmation with builtin_node_approval. Never confirm a write with a follow-up question.
- Call only tools of the catalogue below.`
	}
	return `你在执行任务中的一个节点：每一轮决定调用哪些工具，根据返回继续，最后调用 builtin_node_finish 完成；无法完成时调用 builtin_node_fail 说明原因。
规则：
- 工具未成功时，按返回中"下一步："之后的内容执行，不要换着参数反复重试。
- 写工具先直接调用；只有被写入闸门拦下（返回说须经用户确认）后，才按提示调用 builtin_node_approval 申请确认。不要用追问口头确认写操作。
- 只调用下方工具目录中的工具。`
}

// PhaseHint states the contract's one fact about progress
// (TOOL_OBSERVATION §7.4): which required outputs are not written yet, or
// that all are. A contract without required outputs gets no hint (""): the
// runtime does not infer progress from evidence or outputs.
func PhaseHint(c *contract.Contract, written map[string]abi.OutputValue, l abi.Locale) string {
	if c == nil {
		return ""
	}
	var required, missing []string
	for _, key := range c.OutputNames() {
		if !c.Outputs[key].Required {
			continue
		}
		required = append(required, key)
		if _, ok := written[key]; !ok {
			missing = append(missing, key)
		}
	}
	switch {
	case len(required) == 0:
		return ""
	case len(missing) > 0 && l == abi.LocaleEN:
		return "Required outputs not written yet: " + strings.Join(missing, ", ")
	case len(missing) > 0:
		return "尚未写入的必填产出：" + strings.Join(missing, "、")
	case l == abi.LocaleEN:
		return "All required outputs are written: " + strings.Join(required, ", ")
	}
	return "必填产出已全部写入：" + strings.Join(required, "、")
}

// PromptInput is what a node prompt is made of.
type PromptInput struct {
	Locale abi.Locale
	// Agent gives the five profile texts (identity, mission, boundary,
	// style, principles); empty ones are left out.
	Agent contract.AgentProfile
	// Manual is the skill's skill_manual.
	Manual string
	// Catalog is the catalog's Prompt.
	Catalog string
	// Phase is PhaseHint's text; "" leaves the section out.
	Phase string
	// Inputs is InputsHint's text; "" leaves the section out.
	Inputs string
	// Reflect is ReflectHint's text, after a non-success; "" leaves it out.
	Reflect string
}

// ReflectHint guides the model, after a tool call that did not succeed,
// through the diagnose and fix-proposal steps of TOOL_USE_RELIABILITY
// (二、2): what category of error, which step, on what evidence, why; then
// which fix and the corrected call. It never replaces the observation's
// next step: the fix must follow it.
func ReflectHint(l abi.Locale) string { return textFor(l, txtReflect) }

// NodePrompt assembles the system prompt of a node: the rules, the agent's
// profile, the skill manual, the node's inputs, the tool catalogue, the
// phase hint and, after a non-success, the reflection steps.
func NodePrompt(in PromptInput) string {
	en := in.Locale == abi.LocaleEN
	titles := []string{"身份", "职责", "边界", "风格", "原则", "技能手册", "节点输入", "工具目录", "阶段提示", "失败反思"}
	if en {
		titles = []string{"Identity", "Mission", "Boundaries", "Style", "Principles", "Skill manual", "Inputs", "Tools", "Phase", "Reflection"}
	}
	a := in.Agent
	texts := []string{a.IdentityDesc, a.MissionDesc, a.BoundaryDesc, a.StyleDesc, a.PrincipleDesc, in.Manual, in.Inputs, in.Catalog, in.Phase, in.Reflect}
	var b strings.Builder
	b.WriteString(ReactPrompt(in.Locale))
	for i, t := range texts {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		b.WriteString("\n\n## " + titles[i] + "\n" + t)
	}
	return b.String()
}
