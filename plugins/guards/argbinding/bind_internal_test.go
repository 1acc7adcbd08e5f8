package argbinding

import (
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
)

const state = `"state":{"state.node":{"shared":{"spaceId":"S2"},"outputs":{"draftId":{"value":"D-9","sourceType":"EVIDENCE"}}},` +
	`"state.entities":{"entities":[{"type":"customer","id":"C1","name":"Acme","attrs":{"taxNo":"TX1"}}]},` +
	`"state.evidence":{"items":[{"id":"ev-1","status":"SUCCESS","businessOk":true,"extracts":{"tags":[{"id":"t1"}]}}]}}`

func TestBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, req string
		args      string
		facts     []abi.Fact
		err       bool
	}{
		{"bindings", `{"args":{"a":1},"contract":{"args":{"spaceId":{"from":"shared.spaceId"},"c":{"const":"CNY"},"tag":{"from":"evidence.tags.0.id"}}},` + state + `}`,
			`{"a":1,"c":"CNY","spaceId":"S2","tag":"t1"}`, []abi.Fact{
				{Path: "c", Source: "CONTRACT", Detail: "const"},
				{Path: "spaceId", Source: "SHARED", Detail: "shared.spaceId"},
				{Path: "tag", Source: "EVIDENCE", Detail: "evidence.tags.0.id@ev-1"},
			}, false},
		{"bound arguments are the base", `{"args":{"a":1},"bound":{"b":2},"contract":{"args":{"c":{"const":1}}}}`,
			`{"b":2,"c":1}`, []abi.Fact{{Path: "c", Source: "CONTRACT", Detail: "const"}}, false},
		{"nothing bound", `{"args":{"a":1},"contract":{"args":{"spaceId":{"from":"shared.absent"}}},` + state + `}`, "", nil, false},
		{"no contract", `{"args":{"a":1}}`, "", nil, false},
		{"invalid contract", `{"args":{"a":1},"contract":{"args":{"x":{"from":"nowhere.x"}}}}`, "", nil, true},
		{"not an object", `{"args":[1],"contract":{"args":{"c":{"const":1}}}}`, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, facts, err := Bind(envelope.Bytes(tt.req))
			if string(args) != tt.args || !reflect.DeepEqual(facts, tt.facts) || (err != nil) != tt.err {
				t.Fatalf("got %s %+v, %v\nwant %s %+v", args, facts, err, tt.args, tt.facts)
			}
		})
	}
}
