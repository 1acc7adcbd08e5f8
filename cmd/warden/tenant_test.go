package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// guardedSkill is killFixture's cms.website skill with the tenant guard
// domaindeny attached after ParamContract, denying evil.org, as an upload.
func guardedSkill(ref string) string {
	return skillWithGuard(map[string]any{"ref": ref, "phase": "before", "position": "after:ParamContract", "config": map[string]any{"deny": []string{"evil.org"}}})
}

// skillWithGuard is killFixture's cms.website skill with one tenant guard
// attached, as an upload.
func skillWithGuard(guard map[string]any) string {
	contract := map[string]any{
		"tools": map[string]any{
			"find_website": map[string]any{"label": "Find a website", "success": map[string]any{"path": "code", "op": "EQ", "value": 200}},
			"create_website": map[string]any{"label": "Create a website", "sideEffect": "WRITE", "idempotencyKey": []string{"domain"},
				"timeoutMs": 60000, "success": map[string]any{"path": "code", "op": "EQ", "value": 200},
				"error":  map[string]any{"code": "code", "message": "msg"},
				"verify": map[string]any{"tool": "find_website", "args": map[string]any{"domain": map[string]any{"from": "call.domain"}}}},
		},
		"guards": []any{guard},
	}
	c, _ := json.Marshal(contract)
	b, _ := json.Marshal(map[string]any{"skill_name": "Website creation", "skill_manual": "Create the website the user asks for.",
		"skill_contract": string(c), "toolNames": []string{"find_website", "create_website"}})
	return string(b)
}

// TestServeTenantGuard does what a tenant does through a real warden
// serve's API and CLI, on SQLite (one instance) and PostgreSQL (two): it
// installs its guard on instance A and uploads the skill attaching it on
// instance B; a message on B whose model asks for evil.org is REJECTED with
// the guard's reason and next step, then spring.example.com goes through
// approval and the write is made once. A skill naming a missing ref is
// refused at upload, the guard cannot be deleted while attached, and a
// module asking for an ungranted capability is refused. Then a guard that
// traps, attached in its place, fails the call closed on a third instance
// (on SQLite, an instance of its own): REJECTED PLUGIN_TRAP naming the
// guard, the tool not called.
func TestServeTenantGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	guard := testdata.Wasm(t, "domaindeny")
	caps := testdata.Wasm(t, "capsask")
	trap := testdata.Wasm(t, "trapguard")
	for _, tt := range []struct {
		name      string
		dialect   sqlstore.Dialect
		instances int
	}{
		{"sqlite", sqlstore.SQLite, 1},
		{"postgres", sqlstore.Postgres, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dsn := sqltest.DSN(t, tt.dialect) // skips PostgreSQL without one
			_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
			skills, keys := killFixture(t)
			script := filepath.Join(t.TempDir(), "script.json")
			writeFile(t, script, `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Evil","domain":"evil.org"}}]},
		{"expect":{"tool":"create_website","outcome":"REJECTED","code":"ARG_REJECTED"},"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Spring","domain":"spring.example.com"}}]},
		{"expect":{"tool":"create_website","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create spring.example.com","toolName":"create_website"}}]},
		{"expect":{"tool":"create_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"spring.example.com created"}}]}]`)
			serving := regexp.MustCompile(`serving on (http://\S+)`)
			args := func(name string) []string {
				return []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", string(tt.dialect) + ":" + dsn,
					"--instance", name, "--native", "--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL}
			}
			// The instances of one PostgreSQL share a forwarding secret.
			env := []string{"WARDEN_FORWARD_SECRET=" + strings.Repeat("f", 32)}
			a, baseA := startEnv(t, env, serving, warden, args("warden-a")...)
			b, baseB := a, baseA
			if tt.instances == 2 {
				b, baseB = startEnv(t, env, serving, warden, args("warden-b")...)
			}
			cli := func(base string, args ...string) (int, string) {
				cmd := exec.Command(warden, append(args, "--server", base, "--key", tenantKey)...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return code, out.String()
			}
			type apiErr struct {
				Error struct{ Code, Message string }
			}

			// The tenant installs its guard on A, through the CLI.
			if code, out := cli(baseA, "plugins", "install", guard); code != 0 || !strings.HasPrefix(out, "plugin domaindeny@0.1.0 installed for tenant acme: a guard, sha256 ") {
				t.Fatalf("plugins install on a: %d %s\n%s", code, out, a.out.String())
			}
			// A module asking for capabilities the tenant is not granted.
			if code, out := cli(baseA, "plugins", "install", caps); code != 1 ||
				out != "warden: capability_denied: plugin capsask asks for capabilities the tenant may not have: effect.node, state.conversation (tenant acme may have: none)\n" {
				t.Fatalf("capsask: %d %s", code, out)
			}
			// On B: a skill naming a ref nobody installed is refused.
			var refused apiErr
			if code := apiCall(t, baseB, "PUT", "/v1/skills/cms.website", tenantKey, guardedSkill("domainguard@9.9.9"), &refused); code != 400 ||
				refused.Error.Code != "skill_invalid" ||
				refused.Error.Message != "skill cms.website: 1 problem(s): guards[0]: ref domainguard@9.9.9 is not installed for tenant acme (PUT /v1/plugins/{name})" {
				t.Fatalf("missing ref on b: %d %+v", code, refused)
			}
			// The skill attaching the guard A installed, uploaded on B.
			var sk struct {
				Source string   `json:"source"`
				Guards []string `json:"guards"`
			}
			if code := apiCall(t, baseB, "PUT", "/v1/skills/cms.website", tenantKey, guardedSkill("domaindeny@0.1.0"), &sk); code != 201 ||
				sk.Source != "store" || len(sk.Guards) != 1 {
				t.Fatalf("skill upload on b: %d %+v\n%s", code, sk, b.out.String())
			}
			// Attached, the guard cannot be deleted (asked on A).
			if code, out := cli(baseA, "plugins", "delete", "domaindeny"); code != 1 ||
				out != "warden: plugin_attached: plugin domaindeny is attached by skills cms.website: detach it from them first\n" {
				t.Fatalf("delete while attached: %d %s", code, out)
			}
			if code, out := cli(baseA, "plugins", "list"); code != 0 || !regexp.MustCompile(`domaindeny\s+0\.1\.0\s+guard\s+[0-9a-f]{12}\s+attached\s+cms\.website\s`).MatchString(out) {
				t.Fatalf("plugins list on a: %d %s", code, out)
			}

			var sess struct{ ID string }
			if code := apiCall(t, baseB, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
				t.Fatalf("create session on b: %d", code)
			}
			var res struct {
				Task     struct{ Status string }
				Approval struct{ ID string }
				Events   []struct{ Kind, Tool, Outcome, Name, Sent string }
			}
			if code := apiCall(t, baseB, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey,
				`{"text":"create the website Evil with domain evil.org in space sp-1, or else Spring with spring.example.com"}`, &res); code != 200 ||
				res.Task.Status != "SUSPENDED" || res.Approval.ID == "" {
				t.Fatalf("message on b: %d %+v\n%s", code, res, b.out.String())
			}
			rejected := false
			for _, e := range res.Events {
				if e.Kind == "TOOL" && e.Tool == "create_website" && e.Outcome == "REJECTED" && e.Name == "ARG_REJECTED" &&
					strings.Contains(e.Sent, "域名 evil.org 在租户的禁止名单上") && strings.Contains(e.Sent, "换一个不在禁止名单上的域名") {
					rejected = true
				}
			}
			if !rejected {
				t.Fatalf("evil.org was not rejected by the guard with its reason and next step: %+v", res.Events)
			}
			var done struct {
				Task struct{ Status, Output string }
			}
			if code := apiCall(t, baseB, "POST", "/v1/approvals/"+res.Approval.ID, tenantKey, `{"decision":"CONFIRM"}`, &done); code != 200 ||
				done.Task.Status != "DONE" || done.Task.Output != "spring.example.com created" {
				t.Fatalf("CONFIRM on b: %d %+v\n%s", code, done, b.out.String())
			}
			cms, err := mcp.Dial(context.Background(), mcp.Config{URL: mcpURL})
			if err != nil {
				t.Fatal(err)
			}
			defer cms.Close()
			r, err := cms.CallTool(context.Background(), "admin_stats", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Data struct{ Calls map[string]int } `json:"data"`
			}
			if err := json.Unmarshal(r.Content, &st); err != nil || st.Data.Calls["create_website"] != 1 {
				t.Fatalf("create_website calls: %+v %v", st.Data.Calls, err)
			}

			// A guard that traps fails the call closed. Instance C's model
			// calls create_website at once; on PostgreSQL C shares the
			// store (the guard installed on A, the skill uploaded on B), on
			// SQLite it is a serve of its own.
			trapScript := filepath.Join(t.TempDir(), "trap.json")
			writeFile(t, trapScript, `[
		{"tool_calls":[{"name":"create_website","arguments":{"spaceId":"sp-1","name":"Trap","domain":"trap.example.com"}}]},
		{"expect":{"tool":"create_website","outcome":"REJECTED","code":"PLUGIN_TRAP"},"tool_calls":[{"name":"builtin_node_fail","arguments":{"reason":"the guard failed"}}]}]`)
			cArgs := args("warden-c")
			for i, a := range cArgs {
				switch {
				case a == "--model-script":
					cArgs[i+1] = trapScript
				case a == "--store" && tt.instances == 1:
					cArgs[i+1] = "sqlite:" + filepath.Join(t.TempDir(), "trap.db")
				}
			}
			c, baseC := startEnv(t, env, serving, warden, cArgs...)
			installOn, uploadOn := baseA, baseB
			if tt.instances == 1 {
				installOn, uploadOn = baseC, baseC
			}
			if code, out := cli(installOn, "plugins", "install", trap); code != 0 || !strings.HasPrefix(out, "plugin trapguard@1.0.0 installed for tenant acme: a guard, sha256 ") {
				t.Fatalf("plugins install trapguard: %d %s", code, out)
			}
			trapped := skillWithGuard(map[string]any{"ref": "trapguard@1.0.0", "phase": "before", "position": "after:ParamContract", "config": map[string]any{"tool": "create_website"}})
			if code := apiCall(t, uploadOn, "PUT", "/v1/skills/cms.website", tenantKey, trapped, &sk); (code != 200 && code != 201) ||
				len(sk.Guards) != 1 || sk.Guards[0] != "trapguard@1.0.0" {
				t.Fatalf("skill attaching trapguard: %d %+v", code, sk)
			}
			if code := apiCall(t, baseC, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
				t.Fatalf("create session on c: %d", code)
			}
			var failed struct {
				Task   struct{ Status string }
				Events []struct{ Kind, Tool, Outcome, Name, Guard string }
			}
			if code := apiCall(t, baseC, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey,
				`{"text":"create the website Trap with domain trap.example.com in space sp-1"}`, &failed); code != 200 || failed.Task.Status != "FAILED" {
				t.Fatalf("message on c: %d %+v\n%s", code, failed, c.out.String())
			}
			closed := false
			for _, e := range failed.Events {
				if e.Kind == "TOOL" && e.Tool == "create_website" {
					closed = e.Outcome == "REJECTED" && e.Name == "PLUGIN_TRAP" && e.Guard == "trapguard@1.0.0"
				}
			}
			if !closed {
				t.Fatalf("create_website was not failed closed by the trapping guard: %+v", failed.Events)
			}
			r, err = cms.CallTool(context.Background(), "admin_stats", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(r.Content, &st); err != nil || st.Data.Calls["create_website"] != 1 {
				t.Fatalf("create_website calls past a trapping guard: %+v %v", st.Data.Calls, err)
			}
		})
	}
}

// TestServeTenantBuiltin: a tenant installs a third-party builtin through
// the CLI of a real warden serve, on SQLite (one instance) and PostgreSQL
// (two: installed on A, called on B); the model calls it, a call against
// its declared schema is REJECTED before it runs and a good one answers; a
// builtin taking a first-party builtin's name is refused.
func TestServeTenantBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden and the example MCP server")
	}
	warden := buildBin(t, "warden", ".")
	cmsBin := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	unitconv, err := testdata.Build("./examples/builtins/unitconv/cmd")
	if err != nil {
		t.Fatal(err)
	}
	impostor := testdata.Wasm(t, "impostor")
	for _, tt := range []struct {
		name      string
		dialect   sqlstore.Dialect
		instances int
	}{
		{"sqlite", sqlstore.SQLite, 1},
		{"postgres", sqlstore.Postgres, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dsn := sqltest.DSN(t, tt.dialect) // skips PostgreSQL without one
			_, mcpURL := start(t, regexp.MustCompile(`listening on (http://\S+)`), cmsBin, "-http", "127.0.0.1:0")
			skills, keys := killFixture(t)
			script := filepath.Join(t.TempDir(), "script.json")
			writeFile(t, script, `[
		{"tool_calls":[{"name":"unitconv_convert","arguments":{"value":"ten","from":"km","to":"mi"}}]},
		{"expect":{"tool":"unitconv_convert","outcome":"REJECTED","code":"ARG_REJECTED"},"tool_calls":[{"name":"unitconv_convert","arguments":{"value":10,"from":"km","to":"mi"}}]},
		{"expect":{"tool":"unitconv_convert","outcome":"SUCCESS"},"tool_calls":[{"name":"find_website","arguments":{"domain":"example.com"}}]},
		{"expect":{"tool":"find_website","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"10 km is 6.2 mi"}}]}]`)
			serving := regexp.MustCompile(`serving on (http://\S+)`)
			args := func(name string) []string {
				return []string{"serve", "--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--store", string(tt.dialect) + ":" + dsn,
					"--instance", name, "--native", "--model", "scripted", "--model-script", script, "--tools", "mcp-url", "--mcp-url", mcpURL}
			}
			// The instances of one PostgreSQL share a forwarding secret.
			env := []string{"WARDEN_FORWARD_SECRET=" + strings.Repeat("f", 32)}
			srv, baseA := startEnv(t, env, serving, warden, args("warden-a")...)
			baseB := baseA
			if tt.instances == 2 {
				srv, baseB = startEnv(t, env, serving, warden, args("warden-b")...)
			}
			cli := func(args ...string) (int, string) {
				cmd := exec.Command(warden, append(args, "--server", baseA, "--key", tenantKey)...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode(), out.String()
				} else if err != nil {
					t.Fatal(err)
				}
				return 0, out.String()
			}
			if code, out := cli("plugins", "install", "--name", "acme.impostor", impostor); code != 1 ||
				!strings.HasPrefix(out, "warden: plugin_rejected: builtin acme.impostor: tools builtin_node_finish (a first-party builtin)") {
				t.Fatalf("impostor: %d %s", code, out)
			}
			if code, out := cli("plugins", "install", "--name", "acme.unitconv", unitconv); code != 0 ||
				!strings.HasPrefix(out, "plugin acme.unitconv@1.2.0 installed for tenant acme: a builtin, sha256 ") {
				t.Fatalf("unitconv: %d %s", code, out)
			}
			var sess struct{ ID string }
			if code := apiCall(t, baseB, "POST", "/v1/sessions", tenantKey, "", &sess); code != 201 {
				t.Fatalf("create session: %d", code)
			}
			var res struct {
				Task   struct{ Status, Output string }
				Events []struct{ Kind, Tool, Outcome, Name string }
			}
			if code := apiCall(t, baseB, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"how many miles is 10 km?"}`, &res); code != 200 ||
				res.Task.Status != "DONE" || res.Task.Output != "10 km is 6.2 mi" {
				t.Fatalf("message: %d %+v\n%s", code, res, srv.out.String())
			}
			var rejected, answered bool
			for _, e := range res.Events {
				rejected = rejected || (e.Kind == "TOOL" && e.Tool == "unitconv_convert" && e.Outcome == "REJECTED" && e.Name == "ARG_REJECTED")
				answered = answered || (e.Kind == "TOOL" && e.Tool == "unitconv_convert" && e.Outcome == "SUCCESS")
			}
			if !rejected || !answered {
				t.Fatalf("events: %+v", res.Events)
			}
		})
	}
}
