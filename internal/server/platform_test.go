package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

const keyGateway = "key-acme-gateway"

// platformTools are the approval scenario's tools with a create_site that
// takes the creator and the organisation.
func platformTools() *tscripted.Server {
	schema := func(s string) json.RawMessage { return json.RawMessage(s) }
	return tscripted.New(nil,
		tscripted.Tool{Tool: tools.Tool{Name: "query_space", Description: "查询空间",
			InputSchema: schema(`{"type":"object","required":["spaceName"],"properties":{"spaceName":{"type":"string"}}}`)},
			Handler: tscripted.Fixed(`{"code":200,"msg":"ok","data":{"spaces":[{"id":42,"name":"市场部"}]}}`)},
		tscripted.Tool{Tool: tools.Tool{Name: "query_site", Description: "查询网站", InputSchema: schema(`{"type":"object","properties":{}}`)},
			Handler: tscripted.Fixed(`{"code":200,"data":{"sites":[]}}`)},
		tscripted.Tool{Tool: tools.Tool{Name: "create_site", Description: "创建网站",
			InputSchema: schema(`{"type":"object","additionalProperties":false,"required":["title","spaceId","ownerId","organName"],
				"properties":{"title":{"type":"string"},"spaceId":{"type":"integer"},"ownerId":{"type":"integer"},"organName":{"type":"string"}}}`)},
			Write: true, Handler: tscripted.Fixed(`{"code":200,"msg":"ok","data":{"id":"site_7","title":"Spring Launch"}}`)},
	)
}

// platformFixture serves the approval scenario with create_site binding
// ownerId from platform.userId and organName from platform.organName, and
// a gateway key of acme that may pass them in X-User-Id and X-Organ-Name.
func platformFixture(t *testing.T) *fixture {
	t.Helper()
	return buildFixture(t, fixtureSetup{
		contract: func(c string) string {
			return strings.Replace(c, `"spaceId":{`, `"ownerId":{"from":"platform.userId","label":"创建人"},"organName":{"from":"platform.organName","label":"机构"},"spaceId":{`, 1)
		},
		tools: platformTools(),
		options: func(o *server.Options) {
			o.Keys[keyGateway] = "acme"
			o.Platform = server.PlatformOptions{GatewayKeys: []string{keyGateway},
				Headers: map[string]string{"userId": "X-User-Id", "organName": "X-Organ-Name"}}
		},
	})
}

// sendWith posts body with headers and decodes the answer.
func (f *fixture) sendWith(t *testing.T, path, key, body string, headers map[string]string, out any) (int, server.ErrorBody) {
	t.Helper()
	req, err := http.NewRequest("POST", f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb server.ErrorBody
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &eb); err != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode, eb
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode, eb
}

// The login identity of a message reaches its task from a trusted
// gateway's headers (CONTRACT_SPEC §11): platform.* binds the write's
// creator and organisation, exactly as sent; the approval text leaves the
// platform parameters out; the write runs with them once confirmed.
func TestPlatformIdentityFromGateway(t *testing.T) {
	t.Parallel()
	f := platformFixture(t)
	sid := f.session(t, keyGateway)
	var res server.RunResult
	code, eb := f.sendWith(t, "/v1/sessions/"+sid+"/messages?wait=5m", keyGateway, `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`,
		map[string]string{"X-User-Id": "9007199254740993", "X-Organ-Name": "市场部·华东"}, &res)
	if code != http.StatusOK || res.Approval == nil {
		t.Fatalf("message: %d %+v %+v", code, eb, res.Task)
	}
	if q := res.Approval.Question; q != "在市场部空间创建网站 Spring Launch\n网站标题：Spring Launch\n空间：42" {
		t.Fatalf("approval question %q", q)
	}
	for _, l := range res.Approval.ArgsSummary {
		if l.Label == "创建人" || l.Label == "机构" {
			t.Fatalf("approval summary shows a platform parameter: %+v", res.Approval.ArgsSummary)
		}
	}
	var done server.RunResult
	if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID, keyGateway, `{"decision":"CONFIRM"}`, &done); code != http.StatusOK || done.Task.Status != "DONE" {
		t.Fatalf("CONFIRM: %d %+v %+v", code, eb, done.Task)
	}
	calls := f.tools.Calls()
	last := calls[len(calls)-1]
	if last.Tool != "create_site" || string(last.Args) != `{"title":"Spring Launch","organName":"市场部·华东","ownerId":9007199254740993,"spaceId":42}` {
		t.Fatalf("write sent %s %s", last.Tool, last.Args)
	}
}

// Only a trusted gateway's key may pass the identity: the same headers on
// another key of the tenant are refused and nothing runs; a value that is
// not of its field's type is refused.
func TestPlatformIdentityRefused(t *testing.T) {
	t.Parallel()
	f := platformFixture(t)
	for _, tt := range []struct {
		name    string
		key     string
		headers map[string]string
		status  int
		code    string
		message string
	}{
		{"another key", keyAcme, map[string]string{"X-User-Id": "10086"}, http.StatusForbidden, server.CodePlatformUntrusted,
			"header X-User-Id carries the login identity, which only a trusted gateway's key may pass"},
		{"not a Long", keyGateway, map[string]string{"X-User-Id": "10086.5"}, http.StatusBadRequest, server.CodeInvalidRequest,
			`header X-User-Id (platform.userId): "10086.5" is not an integer (Long)`},
		{"past int64", keyGateway, map[string]string{"X-User-Id": "9223372036854775808"}, http.StatusBadRequest, server.CodeInvalidRequest,
			`header X-User-Id (platform.userId): "9223372036854775808" is not an integer (Long)`},
		{"control character", keyGateway, map[string]string{"X-User-Id": "1", "X-Organ-Name": "a\tb"}, http.StatusBadRequest, server.CodeInvalidRequest,
			"header X-Organ-Name (platform.organName): not UTF-8 text without control characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sid := f.session(t, tt.key)
			code, eb := f.sendWith(t, "/v1/sessions/"+sid+"/messages?wait=5m", tt.key, `{"text":"建一个网站"}`, tt.headers, nil)
			if code != tt.status || eb.Error.Code != tt.code || eb.Error.Message != tt.message {
				t.Fatalf("%d %+v", code, eb)
			}
		})
	}
	if n := len(f.tools.Calls()); n != 0 {
		t.Fatalf("%d tool calls", n)
	}
}

// Options that would let an identity through unchecked, or never, are
// refused by New.
func TestPlatformOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		p    server.PlatformOptions
		want string
	}{
		{"hidden field header", server.PlatformOptions{Headers: map[string]string{"passportId": "X-Passport"}},
			`server: invalid options: platform header for "passportId": not an open platform field (open: userId, memberId, name, organId, organName, organType, deptPath)`},
		{"open field hidden", server.PlatformOptions{Headers: map[string]string{"deptPath": "X-Dept"}, Hidden: []string{"deptPath"}},
			"server: invalid options: platform header for deptPath: the field is hidden (platform.hidden)"},
		{"unknown hidden field", server.PlatformOptions{Hidden: []string{"tenant"}},
			`server: invalid options: platform hidden field "tenant" is not a field of the login identity`},
		{"bad header name", server.PlatformOptions{Headers: map[string]string{"userId": "X User"}},
			`server: invalid options: platform header for userId: "X User" is not a header name`},
		{"authorization", server.PlatformOptions{Headers: map[string]string{"userId": "authorization"}},
			`server: invalid options: platform header for userId: "authorization" carries the API key`},
		{"one header twice", server.PlatformOptions{Headers: map[string]string{"userId": "X-Id", "memberId": "x-id"}},
			"server: invalid options: platform header X-Id carries both memberId and userId"},
		{"gateway key not a tenant key", server.PlatformOptions{GatewayKeys: []string{"key-nobody-at-all"}, Headers: map[string]string{"userId": "X-Id"}},
			"server: invalid options: a gateway key is not a tenant key"},
		{"gateway without headers", server.PlatformOptions{GatewayKeys: []string{keyAcme}},
			"server: invalid options: gateway keys without platform headers: no identity could pass"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := server.New(server.Options{Keys: map[string]string{keyAcme: "acme"}, Agents: agentsFunc(nil), Tools: tscripted.New(nil),
				NewModel: func(string, string) (model.Model, error) { return mscripted.New(nil) }, Loop: loop.DefaultConfig(), Platform: tt.p})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err %v, want %s", err, tt.want)
			}
		})
	}
}
