package abi_test

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
)

// TestAppendJSON checks that the fast encoder gives the same document as
// encoding/json for valid raw fields.
func TestAppendJSON(t *testing.T) {
	t.Parallel()
	res := abi.Rejected(abi.ArgRejected, "缺少必填参数 [buyer]", "补齐后再调用")
	tests := []struct {
		name string
		req  abi.Request
	}{
		{"minimal", abi.Request{ABI: 1, Kind: abi.RoleBuiltin, Tool: "builtin_env_hash"}},
		{"full", abi.Request{ABI: 1, Kind: abi.RoleGuard, Phase: abi.PhaseAfter, Tool: "create_site", CallID: "c\"1\\",
			Args: json.RawMessage(`{"title":"Spring"}`), Bound: json.RawMessage(`{"title":"Spring","spaceId":42}`),
			Provenance: map[string]string{"spaceId": "EVIDENCE", "title": "USER"},
			Contract:   json.RawMessage(`{"sideEffect":"WRITE"}`), Schema: json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`), Config: json.RawMessage(`{"limit":3}`),
			State:  map[string]json.RawMessage{"state.node": json.RawMessage(`{"nodeId":"n1"}`), "state.ledger": json.RawMessage(`{"entries":[]}`)},
			Result: &res, Response: json.RawMessage(`{"code":200}`), Locale: abi.LocaleEN}},
		{"text needing escapes", abi.Request{ABI: 1, Kind: abi.RoleGuard, Tool: "t", ArgsText: "{\"a\":\n\t\x01 <b>&\u2028 \xff 中文"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			// encoding/json escapes <, > and & for HTML; both decode alike.
			var a, b any
			got := tt.req.AppendJSON(nil)
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("invalid JSON %s: %v", got, err)
			}
			_ = json.Unmarshal(want, &b)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}
