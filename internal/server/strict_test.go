package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentwarden/warden/internal/server"
)

// TestStrictBodies: no request body may be read two ways. A key given
// twice or in another case than the field's is refused with 400
// invalid_body naming it, before anything runs; encoding/json alone would
// take {"decision":"REJECT","decision":"CONFIRM"} and {"DECISION":"CONFIRM"}
// as a confirmation of the held write.
func TestStrictBodies(t *testing.T) {
	f := newFixture(t)
	sid, res := f.suspend(t)
	ap := "/v1/approvals/" + res.Approval.ID
	msgs := "/v1/sessions/" + sid + "/messages"
	task := "/v1/sessions/" + sid + "/tasks/" + res.Task.ID
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code, message                 string
	}{
		{"decision twice", "POST", ap, keyAcme, `{"decision":"REJECT","decision":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`duplicate key "decision" in $`},
		{"decision twice, same value", "POST", ap, keyAcme, `{"decision":"CONFIRM","decision":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`duplicate key "decision" in $`},
		{"decision upper-case", "POST", ap, keyAcme, `{"DECISION":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "DECISION" in $ must be spelled "decision"`},
		{"decision capitalised", "POST", ap, keyAcme, `{"Decision":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "Decision" in $ must be spelled "decision"`},
		{"decision then its case variant", "POST", ap, keyAcme, `{"decision":"REJECT","Decision":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "Decision" in $ must be spelled "decision"`},
		{"decision escaped twice", "POST", ap, keyAcme, `{"decision":"REJECT","\u0064ecision":"CONFIRM"}`, 400, server.CodeInvalidBody,
			`duplicate key "decision" in $`},
		{"message text twice", "POST", msgs, keyAcme, `{"text":"a","text":"b"}`, 400, server.CodeInvalidBody,
			`duplicate key "text" in $`},
		{"message Text", "POST", msgs, keyAcme, `{"Text":"a"}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "Text" in $ must be spelled "text"`},
		{"follow-up answer twice", "POST", task + "/follow-up", keyAcme, `{"answer":"a","answer":"b"}`, 400, server.CodeInvalidBody,
			`duplicate key "answer" in $`},
		{"follow-up ANSWER", "POST", task + "/follow-up", keyAcme, `{"ANSWER":"a"}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "ANSWER" in $ must be spelled "answer"`},
		{"verify took twice", "POST", task + "/verify", keyAcme, `{"took":false,"took":true}`, 400, server.CodeInvalidBody,
			`duplicate key "took" in $`},
		{"verify Took", "POST", task + "/verify", keyAcme, `{"Took":true}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "Took" in $ must be spelled "took"`},
		{"unknown field named", "POST", ap, keyAcme, `{"decision":"CONFIRM","force":true}`, 400, server.CodeUnknownField,
			`unknown key "force" in $`},
		{"second value", "POST", ap, keyAcme, `{"decision":"CONFIRM"} {"decision":"CONFIRM"}`, 400, server.CodeBadJSON,
			`the body must hold exactly one JSON object`},
		{"admin: sha256 twice", "PUT", "/admin/v1/slots/Good", keyAdmin, `{"module":"AA==","sha256":"aa","sha256":"bb"}`, 400, server.CodeInvalidBody,
			`duplicate key "sha256" in $`},
		{"admin: Module", "PUT", "/admin/v1/slots/Good", keyAdmin, `{"Module":"AA=="}`, 400, server.CodeInvalidBody,
			`key in the wrong case: "Module" in $ must be spelled "module"`},
		{"admin: a config key twice", "PUT", "/admin/v1/slots/Good", keyAdmin, `{"module":"AA==","config":{"max":1,"max":9}}`, 400, server.CodeInvalidBody,
			`duplicate key "max" in $.config`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, eb := f.do(t, tt.method, tt.path, tt.key, tt.body, nil)
			if code != tt.status || eb.Error.Code != tt.code || eb.Error.Message != tt.message {
				t.Fatalf("got %d %s %q, want %d %s %q", code, eb.Error.Code, eb.Error.Message, tt.status, tt.code, tt.message)
			}
		})
	}
	// Nothing was decided: the approval still waits, the write never ran.
	var a server.Approval
	f.do(t, "GET", ap, keyAcme, "", &a)
	if a.Status != "PENDING" || f.tools.Count("create_site") != 0 {
		t.Fatalf("after refused bodies: approval %s, create_site calls %d", a.Status, f.tools.Count("create_site"))
	}
	// The same decision, sent once in its own case, is taken.
	if code, eb := f.do(t, "POST", ap, keyAcme, `{"decision":"CONFIRM"}`, nil); code != http.StatusOK {
		t.Fatalf("CONFIRM: %d %+v", code, eb)
	}
	if f.tools.Count("create_site") != 1 {
		t.Fatalf("create_site calls %d after CONFIRM, want 1", f.tools.Count("create_site"))
	}
}

// TestWardenConfigHeaderStrict: the application/wasm install's config
// header is refused with a key twice, before any module is compiled.
func TestWardenConfigHeaderStrict(t *testing.T) {
	f := newFixture(t)
	req, err := http.NewRequest("PUT", f.ts.URL+"/admin/v1/slots/Good", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyAdmin)
	req.Header.Set("Content-Type", "application/wasm")
	req.Header.Set("Warden-Config", `{"max":1,"max":9}`)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	eb := decodeError(t, resp)
	if resp.StatusCode != 400 || eb.Error.Code != server.CodeInvalidBody || eb.Error.Message != `the Warden-Config header: duplicate key "max" in $` {
		t.Fatalf("got %d %+v", resp.StatusCode, eb)
	}
}

func decodeError(t *testing.T, resp *http.Response) server.ErrorBody {
	t.Helper()
	var eb server.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil {
		t.Fatalf("%d: error body: %v", resp.StatusCode, err)
	}
	return eb
}
