package rules

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// TestDecodeView checks the gjson decoders against encoding/json: a view
// they accept decodes to the same value; one they refuse is left to
// encoding/json.
func TestDecodeView(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		view   string
		dst    func() any
		decode bool
	}{
		{"node", `{"sessionId":"s","taskId":"t","nodeId":"n","status":"RUNNING","skillKey":"k","depth":1,
			"contract":{"tools":{"a":{}}},"toolNames":["a"],"inputs":{"i":1},"outputs":{"o":{"value":[1],"sourceType":"USER","sourceRef":"r","sourcePath":"p"}},
			"shared":{"s":"x"},"session":{},"platform":{"p":null},"scratch":{"k":{"a":1}},"target":"a","targetClaimed":true,"doneTools":[],
			"lastBusiness":{"tool":"a","outcome":"FAILED","empty":true,"businessOk":false},"outputsUsed":true,"skills":["k"],
			"delegatable":null,"delegateMaxDepth":3,"delegations":[{"skillKey":"d","objective":"o","status":"DONE"}],"reservedKeys":["r"],"extra":1}`,
			func() any { return &abi.NodeView{} }, true},
		{"evidence", `{"items":[{"id":"e","sourceType":"query","locator":"l","retrievedAt":"t","toolCallId":"c","excerpt":"x","contentHash":"h",
			"tool":"a","nodeId":"n","status":"SUCCESS","businessOk":true,"result":"success_with_data","empty":false,"truncated":true,"size":9,
			"extracts":{"k":[1]},"counts":{"k":1},"values":["1"],"payload":{"a":"\u00e9"}},{"id":"f","status":"FAILED"}]}`,
			func() any { return &abi.EvidenceView{} }, true},
		{"ledger", `{"entries":[{"tool":"w","key":"k","state":"STARTED","argsDigest":"d","callId":"c","nodeId":"n","businessOk":false,
			"result":{"outcome":"SUCCESS","text":"ok"},"approved":true,"updatedAt":"u","startedAt":"s"}],"bypassTools":["b"]}`,
			func() any { return &abi.LedgerView{} }, true},
		{"approval", `{"gated":{"tool":"w","callId":"c","args":{"a":1},"argsDigest":"d","at":"t"},"approved":{"tool":"w","argsDigest":"d","approvedAt":"t"}}`,
			func() any { return &abi.ApprovalView{} }, true},
		{"follow-up", `{"current":{"question":"q","expectedFields":["a"],"answer":"x"},"answered":[{"question":"p"}]}`,
			func() any { return &abi.FollowUpView{} }, true},
		{"conversation", `{"userMessages":["a","b"]}`, func() any { return &abi.ConversationView{} }, true},
		{"entities", `{"entities":[{"type":"site","id":"1","name":"n","attrs":{"a":1},"taskId":"t"}]}`, func() any { return &abi.EntitiesView{} }, true},
		{"a field in another case", `{"NodeID":"n"}`, func() any { return &abi.NodeView{} }, false},
		{"a number that is no int", `{"depth":1.5}`, func() any { return &abi.NodeView{} }, false},
		{"an unknown outcome", `{"items":[{"status":"MAYBE"}]}`, func() any { return &abi.EvidenceView{} }, false},
		{"items of the wrong type", `{"items":{}}`, func() any { return &abi.EvidenceView{} }, false},
		{"not an object", `[1]`, func() any { return &abi.NodeView{} }, false},
	} {
		got, want := tt.dst(), tt.dst()
		if decodeView(gjson.Parse(tt.view), got) != tt.decode {
			t.Errorf("%s: decoded = %v, want %v", tt.name, !tt.decode, tt.decode)
			continue
		}
		if !tt.decode {
			continue
		}
		if err := json.Unmarshal([]byte(tt.view), want); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s:\n got %s\nwant %s", tt.name, g, w)
		}
	}
}
