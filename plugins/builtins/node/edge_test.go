package node_test

import (
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/plugins/builtins/node"
)

// TestBrokenState covers requests the loop never sends: a node without a
// skill contract runs under the empty contract, and a state view of the
// wrong type is a tool error.
func TestBrokenState(t *testing.T) {
	t.Parallel()
	for _, tt := range []tc{
		{name: "no contract: the empty contract", tool: node.OutputSet,
			args:    `{"key":"a","value":"<b>","sourceType":"USER"}`,
			state:   map[abi.Capability]any{abi.CapStateNode: `{"nodeId":"n"}`, abi.CapStateConversation: `{"userMessages":["<b>"]}`},
			outcome: abi.OutcomeRejected, code: abi.SourceReject,
			msg: "来源校验失败：产出 a 的值不在用户最近的消息中。下一步：可写的键：任意非平台字段名；来源类型：USER、EVIDENCE、NODE_OUTPUT、SHARED、SESSION、PRIOR_TASK、CONTRACT、PLATFORM；也可以不写，直接调用 builtin_node_finish"},
		{name: "evidence view of the wrong type", tool: node.EvidenceGet, args: `{"evidenceId":"ev1"}`,
			state:   map[abi.Capability]any{abi.CapStateEvidence: `{"items":{}}`},
			outcome: abi.OutcomeFailed, code: abi.ToolError,
			msg: "工具 builtin_evidence_get 发生未知错误：state.evidence: json: cannot unmarshal object into Go struct field EvidenceView.items of type []abi.EvidenceItem。下一步：调用 builtin_node_fail 说明原因"},
	} {
		t.Run(tt.name, func(t *testing.T) { t.Parallel(); run(t, tt) })
	}
}
