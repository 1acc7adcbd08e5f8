package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// script is a Caller that replays one outcome per attempt.
type script struct {
	steps []step
	calls int
	got   []json.RawMessage
}

type step struct {
	resp  Response
	err   error
	block bool // wait for the context instead of answering
}

func (s *script) CallTool(ctx context.Context, _ string, args json.RawMessage) (Response, error) {
	st := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	s.got = append(s.got, args)
	if st.block {
		<-ctx.Done()
		return Response{}, ctx.Err()
	}
	return st.resp, st.err
}

func ok(body string) step { return step{resp: Response{Content: json.RawMessage(body)}} }

func tool(t *testing.T, src string) *contract.Tool {
	t.Helper()
	c, _, err := contract.Parse("t.skill", []byte(`{"tools":{"t":`+src+`,"cache":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Tools["t"]
}

func TestInvoker(t *testing.T) {
	t.Parallel()
	read := `{"retry":{"maxAttempts":3}}`
	write := `{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}}`
	const retryNext = "稍后重试一次；仍失败时调用 builtin_node_fail 说明原因"
	tests := []struct {
		name     string
		contract string // "" = unconfigured tool
		steps    []step
		outcome  abi.Outcome
		code     abi.Code
		message  string
		attempts int
		waited   time.Duration
	}{
		{"success", "", []step{ok(`{"id":1}`)}, abi.OutcomeSuccess, "", "工具 t 调用成功", 1, 0},
		{"mcp isError is the tool's own failure", read, []step{{resp: Response{IsError: true, Text: "space not found"}}}, abi.OutcomeFailed, abi.MCPToolError,
			"MCP 工具 t 返回错误：space not found。下一步：根据失败原因修正参数后再调用，或用 builtin_node_follow_up 向用户说明并询问；无法继续时调用 builtin_node_fail", 1, 0},
		{"invalid params are not retried", read, []step{{err: fmt.Errorf("bad: %w", ErrInvalidParams)}}, abi.OutcomeFailed, abi.MCPInvalidParams,
			"MCP 工具 t 报告参数错误：bad: tool invalid params。下一步：按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户", 1, 0},
		{"read unreachable retried then failed", read, []step{{err: ErrUnreachable}}, abi.OutcomeFailed, abi.ToolUnreachable,
			"工具 t 不可达（已尝试 3 次）。下一步：" + retryNext, 3, 3 * time.Second},
		{"read recovers on the second attempt", read, []step{{err: ErrIO}, ok(`{}`)}, abi.OutcomeSuccess, "", "工具 t 调用成功", 2, time.Second},
		{"rpc error", `{"retry":{"maxAttempts":1}}`, []step{{err: fmt.Errorf("decode: %w", ErrRPC)}}, abi.OutcomeFailed, abi.MCPRPCError,
			"调用 MCP 工具 t 时发生 RPC 错误：decode: tool RPC error。下一步：" + retryNext, 1, 0},
		{"unknown error", `{"retry":{"maxAttempts":1}}`, []step{{err: errors.New("boom")}}, abi.OutcomeFailed, abi.ToolError,
			"工具 t 发生未知错误：boom。下一步：" + retryNext, 1, 0},
		{"read timeout uses the tool's timeoutMs", `{"timeoutMs":20,"retry":{"maxAttempts":1}}`, []step{{block: true}}, abi.OutcomeFailed, abi.ToolTimeout,
			"工具 t 在 20ms 内没有返回。下一步：缩小查询范围后重试；写操作不要重复调用，等待核实", 1, 0},
		{"write timeout is never retried and never repeated", `{"sideEffect":"WRITE","timeoutMs":20,"success":{"path":"ok","op":"TRUTHY"}}`, []step{{block: true}}, abi.OutcomeFailed, abi.ToolTimeout,
			"工具 t 在 20ms 内没有返回。下一步：等待写结果核实完成，不要再次调用该写工具", 1, 0},
		{"write IO error: outcome unknown", write, []step{{err: ErrIO}}, abi.OutcomeFailed, abi.ToolIOError,
			"调用工具 t 时发生 IO 异常：tool I/O error。下一步：等待写结果核实完成，不要再次调用该写工具", 1, 0},
		{"write unreachable: nothing was sent", write, []step{{err: ErrUnreachable}}, abi.OutcomeFailed, abi.ToolUnreachable,
			"工具 t 不可达。下一步：" + retryNext, 1, 0},
		{"fallback named once retries are exhausted", `{"retry":{"maxAttempts":2},"fallback":"cache"}`, []step{{err: ErrUnreachable}}, abi.OutcomeFailed, abi.ToolUnreachable,
			"工具 t 不可达（已尝试 2 次）。下一步：改用备用工具 cache 获取数据；仍失败时调用 builtin_node_fail 说明原因", 2, time.Second},
		{"default budget: 4 attempts, 1 s 2 s 4 s", "", []step{{err: ErrUnreachable}}, abi.OutcomeFailed, abi.ToolUnreachable,
			"工具 t 不可达（已尝试 4 次）。下一步：" + retryNext, 4, 7 * time.Second},
		{"auth refused: never retried, the model stops", "", []step{{err: fmt.Errorf("HTTP 401 Unauthorized: token expired: %w", ErrAuth)}}, abi.OutcomeFailed, abi.ToolAuthFailed,
			"工具 t 的服务拒绝了 Warden 的凭据：HTTP 401 Unauthorized: token expired: tool authorization refused。下一步：不要重试，也不要改用其它工具绕过；调用 builtin_node_fail 说明工具 t 的服务拒绝了授权，需由管理员更新凭据", 1, 0},
		{"write auth refused: nothing ran, no verify", write, []step{{err: fmt.Errorf("HTTP 403 Forbidden: %w", ErrAuth)}}, abi.OutcomeFailed, abi.ToolAuthFailed,
			"工具 t 的服务拒绝了 Warden 的凭据：HTTP 403 Forbidden: tool authorization refused。下一步：不要重试，也不要改用其它工具绕过；调用 builtin_node_fail 说明工具 t 的服务拒绝了授权，需由管理员更新凭据", 1, 0},
		{"read auth refused: no fallback either", `{"retry":{"maxAttempts":2},"fallback":"cache"}`, []step{{err: ErrAuth}}, abi.OutcomeFailed, abi.ToolAuthFailed,
			"工具 t 的服务拒绝了 Warden 的凭据：tool authorization refused。下一步：不要重试，也不要改用其它工具绕过；调用 builtin_node_fail 说明工具 t 的服务拒绝了授权，需由管理员更新凭据", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tc *contract.Tool
			if tt.contract != "" {
				tc = tool(t, tt.contract)
			}
			sc := &script{steps: tt.steps}
			var waited time.Duration
			inv := &Invoker{Caller: sc, Sleep: func(_ context.Context, d time.Duration) error { waited += d; return nil }}
			got := inv.Invoke(context.Background(), Invocation{Tool: "t", Args: json.RawMessage(`{"q":1}`), Contract: tc})
			o := got.Observation
			if o.Outcome != tt.outcome || o.Code != tt.code || o.Message() != tt.message {
				t.Fatalf("got %v %s %q\nwant %v %s %q", o.Outcome, o.Code, o.Message(), tt.outcome, tt.code, tt.message)
			}
			if got.Attempts != tt.attempts || sc.calls != tt.attempts || waited != tt.waited || got.Waited != tt.waited {
				t.Fatalf("attempts %d (calls %d), waited %v/%v; want %d, %v", got.Attempts, sc.calls, waited, got.Waited, tt.attempts, tt.waited)
			}
		})
	}
}

func TestInvokerEnglish(t *testing.T) {
	t.Parallel()
	inv := &Invoker{Caller: &script{steps: []step{{err: ErrUnreachable}}}, DefaultRetry: &contract.Retry{MaxAttempts: 1}}
	o := inv.Invoke(context.Background(), Invocation{Tool: "t", Locale: abi.LocaleEN}).Observation
	if want := "tool t is unreachable. Next: retry once later; if it fails again, call builtin_node_fail"; o.Message() != want {
		t.Fatalf("got %q", o.Message())
	}
}
