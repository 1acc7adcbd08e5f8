package scripted_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
)

func Example() {
	turns, err := scripted.Parse([]byte(`[
	  {"tool_calls": [{"name": "create_site", "arguments": "{\"name\": \"Shop\""}]},
	  {"expect": {"code": "ARGS_INVALID_JSON"}, "text": "I will fix the arguments."}
	]`))
	if err != nil {
		panic(err)
	}
	m, err := scripted.New(turns)
	if err != nil {
		panic(err)
	}
	conv := []model.Message{{Role: model.RoleUser, Content: "Create a shop site."}}

	resp, _ := m.Complete(context.Background(), model.Request{Messages: conv})
	call := resp.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, call.Arguments)

	// The loop answers the call; here the guards rejected a different code
	// than the script was written for.
	conv = append(conv, resp.Message, model.Message{
		Role: model.RoleTool, ToolCallID: call.ID,
		Content: `{"outcome":"REJECTED","code":"TOOL_NOT_FOUND"}`,
	})
	_, err = m.Complete(context.Background(), model.Request{Messages: conv})
	fmt.Println(errors.Is(err, scripted.ErrDiverged))
	fmt.Println(err)
	// Output:
	// call_1_1 create_site {"name": "Shop"
	// true
	// model/scripted: turn 2: conversation diverged from the script: last observation (tool "create_site", call "call_1_1") has code "TOOL_NOT_FOUND", script expects "ARGS_INVALID_JSON"
}
