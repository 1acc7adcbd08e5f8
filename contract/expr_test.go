package contract

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tidwall/gjson"
)

// fakeScope is a Scope over fixed JSON documents.
type fakeScope struct {
	inputs, outputs, upstream, shared, session string
	prior                                      []Entity // most recent first
	platform                                   map[string]string
	evidence                                   map[string][]EvidenceValue
}

func (s fakeScope) Inputs() gjson.Result   { return gjson.Parse(s.inputs) }
func (s fakeScope) Outputs() gjson.Result  { return gjson.Parse(s.outputs) }
func (s fakeScope) Upstream() gjson.Result { return gjson.Parse(s.upstream) }
func (s fakeScope) Shared() gjson.Result   { return gjson.Parse(s.shared) }
func (s fakeScope) Session() gjson.Result  { return gjson.Parse(s.session) }
func (s fakeScope) Prior(typ, id string) (Entity, bool) {
	for _, e := range s.prior {
		if e.Type == typ && (id == "" || e.ID == id) {
			return e, true
		}
	}
	return Entity{}, false
}
func (s fakeScope) Platform(f string) (gjson.Result, bool) {
	v, ok := s.platform[f]
	return gjson.Parse(v), ok
}
func (s fakeScope) Evidence(key string) []EvidenceValue { return s.evidence[key] }

type emptyScope struct{ fakeScope }

func ev(id, raw string) EvidenceValue { return EvidenceValue{EvidenceID: id, Value: gjson.Parse(raw)} }

var scope = fakeScope{
	inputs:   `{"orderNo":"SO-1","customer":{"name":"ACME"}}`,
	outputs:  `{"spaceId":"S9","lines":[{"code":"A"},{"code":"B"}]}`,
	upstream: `{"spaceId":"S1","region":"east"}`,
	shared:   `{"spaceId":"S2","cart":[{"code":"G1"},{"code":"G2"},{"code":"G3"}],"one":[{"id":"X"}],"empty":""}`,
	session:  `{"orderNo":"SO-9","tenant":{"code":"T1"}}`,
	prior: []Entity{
		{Type: "customer", ID: "C2", Name: "Beta Ltd", Attrs: map[string]json.RawMessage{"taxNo": json.RawMessage(`"TX2"`)}},
		{Type: "customer", ID: "C1", Name: "ACME", Attrs: map[string]json.RawMessage{"taxNo": json.RawMessage(`"TX1"`)}},
	},
	platform: map[string]string{"userId": `1001`, "organId": `77`, "name": `"Li Lei"`},
	evidence: map[string][]EvidenceValue{
		"tag_list": {ev("ev-3", `[{"id":"t1","name":"news"},{"id":"t2","name":"tech"}]`), ev("ev-1", `[{"id":"old"}]`)},
		"space":    {ev("ev-4", `[{"spaceId":"S7"}]`)},
		"spaces":   {ev("ev-5", `[{"spaceId":"S7"},{"spaceId":"S8"}]`)},
		"detail":   {ev("ev-6", `{"title":"Hello"}`), ev("ev-2", `{"title":"Old","author":"Ann"}`)},
	},
}

func TestParseExpr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in                       string
		kind                     ExprKind
		path, typ, id, attr, key string
		field                    string
		source                   SourceType
	}{
		{in: "inputs.orderNo", kind: ExprInputs, path: "orderNo", source: SourceNodeOutput},
		{in: "outputs.lines[].code", kind: ExprOutputs, path: "lines[].code", source: SourceNodeOutput},
		{in: "shared.spaceId", kind: ExprShared, path: "spaceId", source: SourceShared},
		{in: "session.tenant.code", kind: ExprSession, path: "tenant.code", source: SourceSession},
		{in: "prior.customer", kind: ExprPrior, typ: "customer", source: SourcePriorTask},
		{in: "prior.customer.id", kind: ExprPrior, typ: "customer", attr: "id", source: SourcePriorTask},
		{in: "prior.customer:C1.taxNo", kind: ExprPrior, typ: "customer", id: "C1", attr: "taxNo", source: SourcePriorTask},
		{in: "platform.userId", kind: ExprPlatform, field: "userId", source: SourcePlatform},
		{in: "platform.deptPath", kind: ExprPlatform, field: "deptPath", source: SourcePlatform},
		{in: "evidence.tag_list", kind: ExprEvidence, key: "tag_list", source: SourceEvidence},
		{in: "evidence.tag_list.0.id", kind: ExprEvidence, key: "tag_list", path: "0.id", source: SourceEvidence},
		{in: "call.orderInfo.orderNo", kind: ExprCall, path: "orderInfo.orderNo", source: SourceContract},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			e, err := ParseExpr(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tt.kind || e.Path.String() != tt.path || e.EntityType != tt.typ || e.EntityID != tt.id || e.Attr != tt.attr || e.Key != tt.key || e.Field != tt.field || e.Source() != tt.source || e.String() != tt.in {
				t.Errorf("ParseExpr(%q) = %+v", tt.in, e)
			}
		})
	}
}

func TestParseExprErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want error
		msg  string
	}{
		{"input.title", ErrExprPrefix, `contract: expression "input.title": invalid expression prefix: unknown prefix "input."`},
		{"title", ErrExprPrefix, `contract: expression "title": invalid expression prefix: want <prefix>.<path>`},
		{"shared.", ErrExprPrefix, `contract: expression "shared.": invalid expression prefix: path empty`},
		{"Shared.x", ErrExprPrefix, `contract: expression "Shared.x": invalid expression prefix: unknown prefix "Shared."`},
		{"evidence..id", ErrExprPrefix, `contract: expression "evidence..id": invalid expression prefix: empty evidence key`},
		{"prior.", ErrExprPrefix, `contract: expression "prior.": invalid expression prefix: want prior.<type>[.<attr>] or prior.<type:id>.<attr>`},
		{"prior.customer:.id", ErrExprPrefix, `contract: expression "prior.customer:.id": invalid expression prefix: want prior.<type>[.<attr>] or prior.<type:id>.<attr>`},
		{"platform.passportId", ErrPlatformField, `contract: expression "platform.passportId": platform field is not open: passportId is hidden`},
		{"platform.adminUser", ErrPlatformField, `contract: expression "platform.adminUser": platform field is not open: adminUser is hidden`},
		{"platform.UserId", ErrPlatformField, `contract: expression "platform.UserId": platform field is not open: unknown field "UserId" (open: userId, memberId, name, organId, organName, organType, deptPath)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExpr(tt.in)
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Errorf("ParseExpr(%q) = %v; want %s", tt.in, err, tt.msg)
			}
		})
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr   string
		want   string // raw JSON; "" = not found
		source SourceType
		ref    string
	}{
		{"inputs.orderNo", `"SO-1"`, SourceNodeOutput, ""},
		{"inputs.customer.name", `"ACME"`, SourceNodeOutput, ""},
		{"outputs.spaceId", `"S9"`, SourceNodeOutput, ""},
		{"outputs.lines[].code", `["A","B"]`, SourceNodeOutput, ""},
		{"shared.spaceId", `"S2"`, SourceShared, ""},
		{"shared.empty", "", SourceShared, ""},
		{"shared.absent", "", SourceShared, ""},
		{"session.tenant.code", `"T1"`, SourceSession, ""},
		{"prior.customer", `"Beta Ltd"`, SourcePriorTask, "customer:C2"},
		{"prior.customer.id", `"C2"`, SourcePriorTask, "customer:C2"},
		{"prior.customer.displayName", `"Beta Ltd"`, SourcePriorTask, "customer:C2"},
		{"prior.customer:C1.taxNo", `"TX1"`, SourcePriorTask, "customer:C1"},
		{"prior.customer:C1.unknown", "", SourcePriorTask, "customer:C1"},
		{"prior.supplier.id", "", SourcePriorTask, ""},
		{"platform.userId", `1001`, SourcePlatform, ""},
		{"platform.name", `"Li Lei"`, SourcePlatform, ""},
		{"platform.deptPath", "", SourcePlatform, ""},
		// §9: the key ends at the first ".", the index follows it.
		{"evidence.tag_list.0.id", `"t1"`, SourceEvidence, "ev-3"},
		{"evidence.tag_list", `[{"id":"t1","name":"news"},{"id":"t2","name":"tech"}]`, SourceEvidence, "ev-3"},
		// Newer evidence first; a path it lacks falls through to older evidence.
		{"evidence.detail.title", `"Hello"`, SourceEvidence, "ev-6"},
		{"evidence.detail.author", `"Ann"`, SourceEvidence, "ev-2"},
		{"evidence.nothing.id", "", SourceEvidence, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			e, err := ParseExpr(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := e.Eval(scope)
			if got := map[bool]string{true: v.Result.Raw, false: ""}[ok]; got != tt.want || v.Source != tt.source || v.Ref != tt.ref {
				t.Errorf("Eval(%s) = %q %s %q, %v; want %q %s %q", tt.expr, v.Result.Raw, v.Source, v.Ref, ok, tt.want, tt.source, tt.ref)
			}
		})
	}
}

func TestInputEval(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("k", []byte(`{"inputs":{
		"spaceId":{"from":"outputs.spaceId"},
		"region":{},
		"orderNo":{"from":"session.orderNo"},
		"customer":{"from":"prior.customer"},
		"other":{"from":"upstream_name"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"spaceId":  `"S1"`, // upstream outputs, not this node's
		"region":   `"east"`,
		"orderNo":  `"SO-9"`,
		"customer": `"Beta Ltd"`,
		"other":    "", // another prefix: the same-named upstream output
	}
	for name, want := range tests {
		v, ok := c.Inputs[name].Eval(scope)
		if got := map[bool]string{true: v.Result.Raw, false: ""}[ok]; got != want {
			t.Errorf("input %s = %q, want %q", name, got, want)
		}
	}
}
