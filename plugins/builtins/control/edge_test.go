package control_test

import (
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// TestBrokenState covers requests the loop never sends: a state view of the
// wrong type, a contract that does not load, a gated call without a tool.
func TestBrokenState(t *testing.T) {
	t.Parallel()
	for _, tt := range []tc{
		{name: "node view of the wrong type", tool: control.Finish, args: `{"output":"done"}`,
			state:   map[abi.Capability]any{abi.CapStateNode: `[1]`},
			outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: "工具 builtin_node_finish 发生未知错误：state.node: json: cannot unmarshal array into Go value of type abi.NodeView。下一步：" + nextFail},
		{name: "contract that does not load", tool: control.FollowUp, args: `{"question":"q"}`, locale: abi.LocaleEN,
			state:   map[abi.Capability]any{abi.CapStateNode: `{"skillKey":"k","contract":{"mode":"LOOP"}}`},
			outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: `tool builtin_node_follow_up failed with an unknown error: contract: skill "k": mode: rule 13: invalid enum value: "LOOP" is not one of REACT, PLAN (case-sensitive). Next: call builtin_node_fail and state the reason`},
		{name: "gated call without a tool", tool: control.Approval, args: `{"summary":"x","toolName":"w"}`,
			state:   map[abi.Capability]any{abi.CapStateApproval: `{"gated":{"tool":""}}`, abi.CapStateNode: node(skill)},
			outcome: abi.OutcomeRejected, code: abi.ApprovalNotGated,
			msg: "申请确认前没有被写入闸门拦下的写调用。下一步：" + nextWriteFirst},
	} {
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}
