package abi_test

import (
	"fmt"

	"github.com/agentwarden/warden/abi"
)

// A guard that finds a required argument missing rejects the call with a
// reason and a next step; Message gives the model-facing text.
func ExampleRejected() {
	o := abi.Rejected(abi.ArgRejected, "缺少必填参数 [buyer]",
		"补齐后再调用；无法补齐时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因")
	fmt.Println(o.Outcome, o.Code.Wire())
	fmt.Println(o.Message())
	fmt.Println(o.Outcome.Stalls())

	o.Locale = abi.LocaleEN
	o.Text, o.Next = "missing required parameter [buyer].", "fill it in and call again"
	fmt.Println(o.Message())
	// Output:
	// REJECTED agent_runtime.40032
	// 缺少必填参数 [buyer]。下一步：补齐后再调用；无法补齐时调用 builtin_node_follow_up 询问用户，或调用 builtin_node_fail 说明原因
	// true
	// missing required parameter [buyer]. Next: fill it in and call again
}

// A write held by the write gate is deferred, with the code's reason template
// and a next-step hint.
func ExampleDeferred() {
	o := abi.Deferred(abi.ApprovalRequired,
		abi.ApprovalRequired.Reason(abi.LocaleZH),
		abi.NextApproval.Text(abi.LocaleZH, "tool", "create_site"))
	fmt.Println(o.Message())
	fmt.Println(o.Outcome.Advances(), o.Outcome.Stalls())
	// Output:
	// 该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 create_site
	// false false
}

// Looking up a code's wire form, category and signal.
func ExampleCode_Info() {
	info, ok := abi.ApprovalToolMismatch.Info()
	fmt.Println(ok, info.Wire, info.Category, info.Signal)
	fmt.Println(info.Reason(abi.LocaleEN, "tool", "delete_site", "gated", "create_site"))
	// Output:
	// true agent_runtime.42246 tool_choice change
	// approval asked for delete_site, but the write held by the gate is create_site
}

// ParseCode accepts both the name and the stored wire form.
func ExampleParseCode() {
	for _, s := range []string{"TOOL_TIMEOUT", "agent_runtime.40016", "agent_runtime.1"} {
		c, err := abi.ParseCode(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		info, _ := c.Info()
		fmt.Println(c, info.Wire, info.Category, info.Signal)
	}
	// Output:
	// TOOL_TIMEOUT agent_runtime.40016 execution retry
	// TOOL_TIMEOUT agent_runtime.40016 execution retry
	// abi: code "agent_runtime.1": unknown error code
}

// A Recorder turns a plugin's second result into a contract violation.
func ExampleRecorder() {
	m := abi.Manifest{Name: "g", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore}}
	r := abi.NewRecorder(&m, 0)
	r.Pass(nil, nil)
	r.Success("again", nil)
	_, err := r.Finish()
	fmt.Println(err)
	// Output:
	// abi: plugin contract violation: a second result in one call
}
