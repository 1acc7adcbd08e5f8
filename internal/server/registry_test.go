package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/sqlstore/sqltest"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/loop"
)

// registries are the stores the registry tests run on: the in-process
// default and sqlstore on SQLite (and PostgreSQL when configured).
var registries = []struct {
	name string
	open func(t *testing.T) store.Directory
}{
	{"memory", func(*testing.T) store.Directory { return store.NewMemory() }},
	{"sqlite", func(t *testing.T) store.Directory { return openDB(t, sqlstore.SQLite) }},
	{"postgres", func(t *testing.T) store.Directory { return openDB(t, sqlstore.Postgres) }},
}

func openDB(t *testing.T, d sqlstore.Dialect) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), d, sqltest.DSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// send sends a request with a content type and returns the status and body.
func (f *fixture) sendRaw(t *testing.T, method, path, key, ct string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// commandModule is a module built as a command: it exports _start.
var commandModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
	1, 4, 1, 0x60, 0, 0, // type: () -> ()
	3, 2, 1, 0, // func 0 of type 0
	7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export _start
	10, 4, 1, 2, 0, 0x0b} // body: end

// guardedContract is the approval scenario's contract with domaindeny
// attached before the call, after ParamContract, denying titles under
// evil.org.
func guardedContract(t *testing.T, ref string) string {
	t.Helper()
	return contractWithGuard(t, map[string]any{"ref": ref, "phase": "before", "position": "after:ParamContract",
		"config": map[string]any{"deny": []string{"evil.org"}, "arg": "title"}})
}

// contractWithGuard is the approval scenario's contract with one guard
// attached.
func contractWithGuard(t *testing.T, guard map[string]any) string {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(testdata.Root(), approvalScenario))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(sc.Skills[0].Contract, &c); err != nil {
		t.Fatal(err)
	}
	c["guards"] = []any{guard}
	b, _ := json.Marshal(c)
	return string(b)
}

func skillBody(t *testing.T, contractText string, toolNames ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"skill_name": "建站", "skill_manual": "先查询空间，再创建网站。",
		"skill_contract": contractText, "toolNames": toolNames})
	return string(b)
}

// TestTenantPluginInstall: every bad install is refused with its own code
// and message, a good one is kept per tenant and shown only to its tenant.
func TestTenantPluginInstall(t *testing.T) {
	t.Parallel()
	guard := testdata.Bytes(t, "domaindeny")
	caps := testdata.Bytes(t, "capsask")
	role := testdata.Bytes(t, "unknownrole")
	for _, st := range registries {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			dir := st.open(t)
			f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
				o.Directory = dir
				o.Capabilities = map[string][]abi.Capability{"globex": {abi.CapClock}}
			}})
			wasm := "application/wasm"
			js := "application/json"
			jsonBody := func(mod []byte, pin string) []byte {
				b, _ := json.Marshal(map[string]any{"module": base64.StdEncoding.EncodeToString(mod), "sha256": pin})
				return b
			}
			for _, tt := range []struct {
				name, method, path, key, ct string
				body                        []byte
				status                      int
				code, message               string
			}{
				{"no pin", "PUT", "/v1/plugins/domaindeny", keyAcme, wasm, guard, 400, server.CodeInvalidRequest,
					"sha256 is required: the module's hex sha256 (?sha256= with application/wasm)"},
				{"wrong pin", "PUT", "/v1/plugins/domaindeny?sha256=" + strings.Repeat("0", 64), keyAcme, wasm, guard, 422, server.CodeDigestMismatch,
					"host: load domaindeny: sha256 " + digest(guard) + ", pinned " + strings.Repeat("0", 64) + ": module digest does not match its pin"},
				{"not wasm", "PUT", "/v1/plugins/domaindeny?sha256=" + digest([]byte("MZ\x90\x00 not a module")), keyAcme, wasm, []byte("MZ\x90\x00 not a module"), 400,
					server.CodeNotWasm, `the module is not WebAssembly (it does not start with \0asm)`},
				{"a command", "PUT", "/v1/plugins/domaindeny?sha256=" + digest(commandModule), keyAcme, wasm, commandModule, 422, server.CodePluginRejected,
					"the module is built as a command (it exports _start); build it as a reactor: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm ./cmd"},
				{"another name", "PUT", "/v1/plugins/other?sha256=" + digest(guard), keyAcme, wasm, guard, 400, server.CodeInvalidRequest,
					"the module's manifest names it domaindeny, not other"},
				{"a bad name", "PUT", "/v1/plugins/Domain%20Deny?sha256=" + digest(guard), keyAcme, wasm, guard, 400, server.CodeInvalidRequest,
					"a plugin name must match ^[a-z0-9][a-z0-9._-]{0,63}$"},
				{"capabilities not granted", "PUT", "/v1/plugins/capsask?sha256=" + digest(caps), keyAcme, wasm, caps, 422, server.CodeCapabilityDenied,
					"plugin capsask asks for capabilities the tenant may not have: effect.node, state.conversation (tenant acme may have: none)"},
				{"capabilities beyond the grant", "PUT", "/v1/plugins/capsask?sha256=" + digest(caps), keyGlobex, wasm, caps, 422, server.CodeCapabilityDenied,
					"plugin capsask asks for capabilities the tenant may not have: effect.node, state.conversation (tenant globex may have: clock)"},
				{"an unknown role", "PUT", "/v1/plugins/unknownrole?sha256=" + digest(role), keyAcme, wasm, role, 422, server.CodePluginRejected,
					`host: load unknownrole: bad plugin manifest: abi: manifest unknownrole: invalid manifest: role "policy" must be "guard" or "builtin"`},
				{"json without pin", "PUT", "/v1/plugins/domaindeny", keyAcme, js, jsonBody(guard, ""), 400, server.CodeInvalidRequest,
					"sha256 is required: the module's hex sha256 (?sha256= with application/wasm)"},
				{"an unknown parameter", "PUT", "/v1/plugins/domaindeny?sha256=" + digest(guard) + "&pin=1", keyAcme, wasm, guard, 400, server.CodeUnknownField,
					"unknown query parameter pin"},
				{"a config", "PUT", "/v1/plugins/domaindeny?sha256=" + digest(guard), keyAcme, wasm, guard, 0, "", ""},
				{"no key", "GET", "/v1/plugins", "", "", nil, 401, server.CodeUnauthorized, "a valid tenant API key is required"},
				{"admin without tenant", "GET", "/v1/plugins", keyAdmin, "", nil, 400, server.CodeInvalidRequest,
					"an admin key names the tenant it acts for: ?tenant=NAME"},
				{"admin, unknown tenant", "GET", "/v1/plugins?tenant=initech", keyAdmin, "", nil, 404, server.CodeTenantNotFound, "no tenant initech"},
				{"tenant for another", "GET", "/v1/plugins?tenant=globex", keyAcme, "", nil, 403, server.CodeForbidden,
					"a tenant key acts for its own tenant only; ?tenant= is for admin keys"},
				{"unknown plugin", "GET", "/v1/plugins/nothing", keyAcme, "", nil, 404, server.CodePluginNotFound, "no plugin nothing"},
				{"delete unknown", "DELETE", "/v1/plugins/nothing", keyAcme, "", nil, 404, server.CodePluginNotFound, "no plugin nothing"},
			} {
				if tt.status == 0 {
					continue
				}
				code, b := f.sendRaw(t, tt.method, tt.path, tt.key, tt.ct, tt.body)
				var eb server.ErrorBody
				_ = json.Unmarshal(b, &eb)
				if code != tt.status || eb.Error.Code != tt.code || eb.Error.Message != tt.message {
					t.Errorf("%s: %d %s %q, want %d %s %q", tt.name, code, eb.Error.Code, eb.Error.Message, tt.status, tt.code, tt.message)
				}
			}

			// Installed: 201, then 200 for the same module; JSON as well.
			path := "/v1/plugins/domaindeny?sha256=sha256:" + digest(guard)
			var info server.PluginInfo
			for i, want := range []int{201, 200} {
				code, b := f.sendRaw(t, "PUT", path, keyAcme, wasm, guard)
				if code != want {
					t.Fatalf("install %d: %d %s", i, code, b)
				}
				if err := json.Unmarshal(b, &info); err != nil {
					t.Fatal(err)
				}
			}
			if code, b := f.sendRaw(t, "PUT", "/v1/plugins/domaindeny", keyAcme, js, jsonBody(guard, digest(guard))); code != 200 {
				t.Fatalf("install as JSON: %d %s", code, b)
			}
			v := info.Versions
			if info.Name != "domaindeny" || info.Tenant != "acme" || len(v) != 1 || v[0].Version != "0.1.0" || v[0].Ref != "domaindeny@0.1.0" ||
				v[0].Digest != digest(guard) || v[0].Role != "guard" || v[0].InstalledBy != "tenant" || v[0].Status != "installed" ||
				len(v[0].Capabilities) != 0 || len(v[0].AttachedBy) != 0 {
				t.Fatalf("installed: %+v", info)
			}
			// globex sees none of acme's; an admin reaches acme's with ?tenant=.
			var list struct{ Plugins []server.PluginInfo }
			if code, _ := f.do(t, "GET", "/v1/plugins", keyGlobex, "", &list); code != 200 || len(list.Plugins) != 0 {
				t.Fatalf("globex's plugins: %d %+v", code, list)
			}
			if code, eb := f.do(t, "GET", "/v1/plugins/domaindeny", keyGlobex, "", nil); code != 404 || eb.Error.Code != server.CodePluginNotFound {
				t.Fatalf("acme's plugin for globex: %d %+v", code, eb)
			}
			if code, eb := f.do(t, "DELETE", "/v1/plugins/domaindeny", keyGlobex, "", nil); code != 404 || eb.Error.Code != server.CodePluginNotFound {
				t.Fatalf("delete of acme's plugin by globex: %d %+v", code, eb)
			}
			if code, _ := f.do(t, "GET", "/v1/plugins?tenant=acme", keyAdmin, "", &list); code != 200 || len(list.Plugins) != 1 || list.Plugins[0].Name != "domaindeny" {
				t.Fatalf("acme's plugins for the admin: %d %+v", code, list)
			}
			// The admin installs for globex; globex sees it as the admin's.
			if code, b := f.sendRaw(t, "PUT", "/v1/plugins/domaindeny?tenant=globex&sha256="+digest(guard), keyAdmin, wasm, guard); code != 201 {
				t.Fatalf("admin install for globex: %d %s", code, b)
			}
			if code, _ := f.do(t, "GET", "/v1/plugins/domaindeny", keyGlobex, "", &info); code != 200 || info.Versions[0].InstalledBy != "admin" {
				t.Fatalf("globex's plugin: %d %+v", code, info)
			}
			if code, b := f.sendRaw(t, "DELETE", "/v1/plugins/domaindeny", keyGlobex, "", nil); code != 200 {
				t.Fatalf("globex deletes its plugin: %d %s", code, b)
			}
			if code, _ := f.do(t, "GET", "/v1/plugins/domaindeny", keyAcme, "", &info); code != 200 {
				t.Fatalf("acme's plugin after globex's delete: %d", code)
			}
		})
	}
}

// TestTenantSkillGuard: a skill attaching a tenant guard is refused while
// the guard is not installed, then takes effect with the next message: the
// guard rejects evil.org with its reason and next step, spring.example.com
// goes through approval and the write is made once. The guard cannot be
// deleted while attached; the skill can, and the file skill serves again.
func TestTenantSkillGuard(t *testing.T) {
	t.Parallel()
	guard := testdata.Bytes(t, "domaindeny")
	for _, st := range registries {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			dir := st.open(t)
			turns := []mscripted.Turn{}
			if err := json.Unmarshal([]byte(`[
				{"tool_calls":[{"name":"query_space","arguments":{"spaceName":"市场部"}}]},
				{"expect":{"tool":"query_space","outcome":"SUCCESS"},"tool_calls":[{"name":"create_site","arguments":{"title":"evil.org"}}]},
				{"expect":{"tool":"create_site","outcome":"REJECTED","code":"ARG_REJECTED"},"tool_calls":[{"name":"create_site","arguments":{"title":"spring.example.com"}}]},
				{"expect":{"tool":"create_site","outcome":"DEFERRED","code":"APPROVAL_REQUIRED"},"tool_calls":[{"name":"builtin_node_approval","arguments":{"summary":"create spring.example.com","toolName":"create_site"}}]},
				{"expect":{"tool":"create_site","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"spring.example.com created"}}]}]`), &turns); err != nil {
				t.Fatal(err)
			}
			f := buildFixture(t, fixtureSetup{turns: turns, options: func(o *server.Options) { o.Directory = dir }})
			const key = "/v1/skills/site.builder"
			body := skillBody(t, guardedContract(t, "domaindeny@0.1.0"), "query_space", "query_site", "create_site")

			for _, tt := range []struct {
				name, body, message string
			}{
				{"a ref not installed", body, "skill site.builder: 1 problem(s): guards[0]: ref domaindeny@0.1.0 is not installed for tenant acme (PUT /v1/plugins/{name})"},
				{"every problem at once", skillBody(t, `{"tools":{"create_site":{"sideEffect":"WRITE"}},"guards":[{"ref":"Nope","phase":"during"}]}`, "create_site", "delete_site", "create_site"),
					"skill site.builder: 5 problem(s): skill_contract.tools.create_site.success: rule 6: WRITE tool without success: a WRITE tool must configure success; skill_contract.guards[0].ref: rule W1: invalid guard ref: \"Nope\": want name@version or sha256:<64 lowercase hex>; skill_contract.guards[0].phase: rule W2: invalid guard phase: \"during\": want before or after; toolNames[1]: tool delete_site is not served by the agent's MCP servers; toolNames[2]: create_site is listed twice"},
			} {
				code, eb := f.do(t, "PUT", key, keyAcme, tt.body, nil)
				if code != 400 || eb.Error.Code != server.CodeSkillInvalid || eb.Error.Message != tt.message {
					t.Errorf("%s: %d %s\n%s\nwant\n%s", tt.name, code, eb.Error.Code, eb.Error.Message, tt.message)
				}
			}
			if code, b := f.sendRaw(t, "PUT", "/v1/plugins/domaindeny?sha256="+digest(guard), keyAcme, "application/wasm", guard); code != 201 {
				t.Fatalf("install: %d %s", code, b)
			}
			var sk server.SkillInfo
			if code, eb := f.do(t, "PUT", key, keyAcme, body, &sk); code != 201 || sk.Source != "store" || len(sk.Guards) != 1 || sk.Guards[0] != "domaindeny@0.1.0" || sk.UpdatedBy != "tenant" {
				t.Fatalf("upload: %d %+v %+v", code, eb, sk)
			}
			// globex's agent is the same, its registry empty: its skill is
			// still the file's.
			if code, _ := f.do(t, "GET", key, keyGlobex, "", &sk); code != 200 || sk.Source != "files" || len(sk.Guards) != 0 {
				t.Fatalf("globex's skill: %d %+v", code, sk)
			}
			if code, eb := f.do(t, "DELETE", "/v1/plugins/domaindeny", keyAcme, "", nil); code != 409 || eb.Error.Code != server.CodePluginAttached ||
				eb.Error.Message != "plugin domaindeny is attached by skills site.builder: detach it from them first" {
				t.Fatalf("delete while attached: %d %+v", code, eb)
			}
			var info server.PluginInfo
			if code, _ := f.do(t, "GET", "/v1/plugins/domaindeny", keyAcme, "", &info); code != 200 || info.Versions[0].Status != "attached" ||
				len(info.Versions[0].AttachedBy) != 1 || info.Versions[0].AttachedBy[0] != "site.builder" {
				t.Fatalf("plugin while attached: %d %+v", code, info)
			}

			sid := f.session(t, keyAcme)
			var res server.RunResult
			if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme,
				`{"text":"在市场部空间建一个网站，标题叫 evil.org；不行就叫 spring.example.com"}`, &res); code != 200 {
				t.Fatalf("message: %d %+v", code, eb)
			}
			var rejected *server.Event
			for i, e := range res.Events {
				if string(e.Kind) == "TOOL" && e.Tool == "create_site" && e.Outcome == "REJECTED" {
					rejected = &res.Events[i]
				}
			}
			if rejected == nil || rejected.Name != "ARG_REJECTED" || !strings.Contains(rejected.Sent, "域名 evil.org 在租户的禁止名单上") ||
				!strings.Contains(rejected.Sent, "换一个不在禁止名单上的域名") {
				t.Fatalf("no rejection by the guard with its reason and next step: %+v", res.Events)
			}
			if res.Task.Status != "SUSPENDED" || res.Approval == nil {
				t.Fatalf("task after message: %+v", res.Task)
			}
			var done server.RunResult
			if code, eb := f.do(t, "POST", "/v1/approvals/"+res.Approval.ID+"?wait=5m", keyAcme, `{"decision":"CONFIRM"}`, &done); code != 200 || done.Task.Status != "DONE" {
				t.Fatalf("confirm: %d %+v %+v", code, eb, done.Task)
			}
			if n := f.tools.Count("create_site"); n != 1 {
				t.Fatalf("create_site called %d times, want 1", n)
			}

			// Deleted, the skill leaves the file skill in effect; the guard
			// may go then.
			if code, eb := f.do(t, "DELETE", key, keyAcme, "", nil); code != 200 {
				t.Fatalf("delete skill: %d %+v", code, eb)
			}
			if code, eb := f.do(t, "DELETE", key, keyAcme, "", nil); code != 409 || eb.Error.Code != server.CodeSkillFromFiles ||
				eb.Error.Message != "skill site.builder comes from the server's skill directory; upload it with status INACTIVE to turn it off" {
				t.Fatalf("delete of the file skill: %d %+v", code, eb)
			}
			if code, eb := f.do(t, "DELETE", "/v1/plugins/domaindeny", keyAcme, "", nil); code != 200 {
				t.Fatalf("delete the detached plugin: %d %+v", code, eb)
			}
			if code, eb := f.do(t, "GET", "/v1/skills/none.such", keyAcme, "", nil); code != 404 || eb.Error.Code != server.CodeSkillNotFound {
				t.Fatalf("unknown skill: %d %+v", code, eb)
			}
		})
	}
}

// TestSkillDroppedAtLoad: a stored skill whose guard is gone by the time a
// message runs is dropped with an ERROR event, never run without it.
func TestSkillDroppedAtLoad(t *testing.T) {
	t.Parallel()
	guard := testdata.Bytes(t, "domaindeny")
	mem := store.NewMemory()
	f := buildFixture(t, fixtureSetup{turns: []mscripted.Turn{{Text: "没有可用的技能"}}, options: func(o *server.Options) { o.Directory = mem }})
	if code, b := f.sendRaw(t, "PUT", "/v1/plugins/domaindeny?sha256="+digest(guard), keyAcme, "application/wasm", guard); code != 201 {
		t.Fatalf("install: %d %s", code, b)
	}
	if code, eb := f.do(t, "PUT", "/v1/skills/site.builder", keyAcme, skillBody(t, guardedContract(t, "domaindeny@0.1.0"), "query_space", "create_site"), nil); code != 201 {
		t.Fatalf("upload: %d %+v", code, eb)
	}
	// The module goes from under the skill (another instance's operator,
	// straight in the store).
	if err := mem.DeletePlugin(context.Background(), "acme", "domaindeny"); err != nil {
		t.Fatal(err)
	}
	sid := f.session(t, keyAcme)
	// No skill is left to plan with: the task fails; its trace says why.
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"建一个网站 evil.org"}`, nil); code != 500 || eb.Error.Code != server.CodeRunFailed {
		t.Fatalf("message without skills: %d %+v", code, eb)
	}
	var res struct{ Events []server.Event }
	if code, _ := f.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &res); code != 200 {
		t.Fatalf("trace: %d", code)
	}
	found := false
	for _, e := range res.Events {
		if e.Kind == server.KindSkill && e.Level == "ERROR" && e.Status == "dropped" &&
			e.Message == "skill site.builder dropped: guards[0]: ref domaindeny@0.1.0 is not installed for tenant acme (PUT /v1/plugins/{name})" {
			found = true
		}
		if e.Tool == "create_site" {
			t.Fatalf("the dropped skill ran: %+v", e)
		}
	}
	if !found {
		t.Fatalf("no SKILL dropped event: %+v", res.Events)
	}
}

// TestSkillDroppedWhenGrantNarrowed: a stored module is checked against
// the tenant's allow-list as it is at each load. Installed and attached
// while the tenant was granted what it asks for, it no longer loads on an
// instance whose operator narrowed the list: the skill is refused at
// upload there and dropped at load with an ERROR event, never run with
// capabilities the tenant no longer has.
func TestSkillDroppedWhenGrantNarrowed(t *testing.T) {
	t.Parallel()
	caps := testdata.Bytes(t, "capsask")
	mem := store.NewMemory()
	granted := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		o.Directory = mem
		o.Capabilities = map[string][]abi.Capability{"acme": {abi.CapEffectNode, abi.CapStateConversation}}
	}})
	if code, b := granted.sendRaw(t, "PUT", "/v1/plugins/capsask?sha256="+digest(caps), keyAcme, "application/wasm", caps); code != 201 {
		t.Fatalf("install: %d %s", code, b)
	}
	body := skillBody(t, contractWithGuard(t, map[string]any{"ref": "capsask@1.0.0", "phase": "before", "position": "after:ParamContract"}),
		"query_space", "query_site", "create_site")
	if code, eb := granted.do(t, "PUT", "/v1/skills/site.builder", keyAcme, body, nil); code != 201 {
		t.Fatalf("upload: %d %+v", code, eb)
	}

	narrowed := buildFixture(t, fixtureSetup{turns: []mscripted.Turn{{Text: "没有可用的技能"}}, options: func(o *server.Options) { o.Directory = mem }})
	const problem = "guards[0]: ref capsask@1.0.0: plugin capsask asks for capabilities the tenant may not have: effect.node, state.conversation (tenant acme may have: none)"
	if code, eb := narrowed.do(t, "PUT", "/v1/skills/site.builder", keyAcme, body, nil); code != 400 || eb.Error.Code != server.CodeSkillInvalid ||
		eb.Error.Message != "skill site.builder: 1 problem(s): "+problem {
		t.Fatalf("upload where the grant is narrowed: %d %+v", code, eb)
	}
	sid := narrowed.session(t, keyAcme)
	if code, eb := narrowed.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"建一个网站 spring.example.com"}`, nil); code != 500 || eb.Error.Code != server.CodeRunFailed {
		t.Fatalf("message without skills: %d %+v", code, eb)
	}
	var res struct{ Events []server.Event }
	if code, _ := narrowed.do(t, "GET", "/v1/sessions/"+sid+"/tasks/t1/trace", keyAcme, "", &res); code != 200 {
		t.Fatalf("trace: %d", code)
	}
	found := false
	for _, e := range res.Events {
		if e.Kind == server.KindSkill && e.Level == "ERROR" && e.Status == "dropped" && e.Message == "skill site.builder dropped: "+problem {
			found = true
		}
		if e.Tool == "create_site" {
			t.Fatalf("the dropped skill ran: %+v", e)
		}
	}
	if !found {
		t.Fatalf("no SKILL dropped event: %+v", res.Events)
	}
}

// TestTenantPluginGranted: a module asking for what the tenant's
// allow-list holds is installed, with exactly that grant.
func TestTenantPluginGranted(t *testing.T) {
	t.Parallel()
	caps := testdata.Bytes(t, "capsask")
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) {
		o.Capabilities = map[string][]abi.Capability{"acme": {abi.CapClock, abi.CapStateConversation, abi.CapEffectNode}}
	}})
	code, b := f.sendRaw(t, "PUT", "/v1/plugins/capsask?sha256="+digest(caps), keyAcme, "application/wasm", caps)
	var info server.PluginInfo
	if err := json.Unmarshal(b, &info); code != 201 || err != nil || len(info.Versions) != 1 ||
		strings.Join(info.Versions[0].Capabilities, ",") != "effect.node,state.conversation" {
		t.Fatalf("install: %d %s", code, b)
	}
	for _, tt := range []struct {
		name string
		caps map[string][]abi.Capability
		want string
	}{
		{"not a tenant", map[string][]abi.Capability{"initech": {abi.CapClock}}, `server: invalid options: capabilities for "initech", which is not a tenant`},
		{"unknown", map[string][]abi.Capability{"acme": {"network"}}, `server: invalid options: tenant acme: capability "network" is unknown`},
	} {
		o := server.Options{Keys: map[string]string{keyAcme: "acme"}, Agents: agentsFunc(nil), Tools: f.tools,
			NewModel: func(string, string) (model.Model, error) { return nil, nil }, Capabilities: tt.caps, Loop: loop.DefaultConfig()}
		if _, err := server.New(o); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}

// TestSkillInactive: an INACTIVE upload is kept without loading (it turns
// a directory's skill off, even one that does not load), and the skill is
// then out of the tenant's agent.
func TestSkillInactive(t *testing.T) {
	t.Parallel()
	f := buildFixture(t, fixtureSetup{})
	body := `{"skill_name":"建站","skill_manual":"","skill_contract":"{\"tools\":{\"create_site\":{\"sideEffect\":\"WRITE\"}}}","toolNames":["gone"],"status":"INACTIVE"}`
	var sk server.SkillInfo
	if code, eb := f.do(t, "PUT", "/v1/skills/site.builder", keyAcme, body, &sk); code != 201 || sk.Status != "INACTIVE" || sk.Source != "store" {
		t.Fatalf("inactive upload: %d %+v %+v", code, eb, sk)
	}
	for _, tt := range []struct{ name, body, message string }{
		{"unknown status", `{"skill_name":"x","skill_contract":"{}","status":"RETIRED"}`, `skill site.builder: 1 problem(s): status: "RETIRED", want ACTIVE or INACTIVE`},
		{"no name", `{"skill_name":" ","skill_contract":"{\"tools\":{}}","status":"INACTIVE"}`, `skill site.builder: 1 problem(s): skill_name: required`},
	} {
		if code, eb := f.do(t, "PUT", "/v1/skills/site.builder", keyAcme, tt.body, nil); code != 400 || eb.Error.Code != server.CodeSkillInvalid || eb.Error.Message != tt.message {
			t.Errorf("%s: %d %+v", tt.name, code, eb)
		}
	}
	for _, tt := range []struct{ name, path, body, code, message string }{
		{"bad key", "/v1/skills/Site%20Builder", `{}`, server.CodeInvalidRequest, "a skill_key is lowercase and dotted, like cms.article.lifecycle (at most 128 characters)"},
		{"unknown field", "/v1/skills/site.builder", `{"skill_name":"x","skill_contract":"{}","tools":[]}`, server.CodeUnknownField, `unknown key "tools" in $`},
	} {
		if code, eb := f.do(t, "PUT", tt.path, keyAcme, tt.body, nil); code != 400 || eb.Error.Code != tt.code || eb.Error.Message != tt.message {
			t.Errorf("%s: %d %+v", tt.name, code, eb)
		}
	}
	// A message now finds no skill to plan with: the task fails.
	sid := f.session(t, keyAcme)
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"建网站"}`, nil); code != 500 || eb.Error.Code != server.CodeRunFailed {
		t.Fatalf("message with the skill off: %d %+v", code, eb)
	}
}

// TestTenantPluginTooLarge: a module over the host's bound is 413.
func TestTenantPluginTooLarge(t *testing.T) {
	t.Parallel()
	guard := testdata.Bytes(t, "domaindeny")
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), MaxModuleBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.Host = h }})
	code, b := f.sendRaw(t, "PUT", "/v1/plugins/domaindeny?sha256="+digest(guard), keyAcme, "application/wasm", guard)
	var eb server.ErrorBody
	_ = json.Unmarshal(b, &eb)
	if want := fmt.Sprintf("host: load domaindeny: %d bytes over 1048576: module too large", len(guard)); code != 413 ||
		eb.Error.Code != server.CodeBodyTooLarge || eb.Error.Message != want {
		t.Fatalf("%d %s, want 413 %s", code, b, want)
	}
}

// TestTenantBuiltin: a tenant's builtin module is offered to its nodes as
// builtins are, its arguments held to its declared schema before it runs;
// a builtin taking a first-party builtin's name is refused at install, and
// another tenant's nodes are not offered it.
func TestTenantBuiltin(t *testing.T) {
	t.Parallel()
	path, err := testdata.Build("./examples/builtins/unitconv/cmd")
	if err != nil {
		t.Fatal(err)
	}
	unitconv, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	impostor := testdata.Bytes(t, "impostor")
	var turns []mscripted.Turn
	if err := json.Unmarshal([]byte(`[
		{"tool_calls":[{"name":"unitconv_convert","arguments":{"value":"ten","from":"km","to":"mi"}}]},
		{"expect":{"tool":"unitconv_convert","outcome":"REJECTED","code":"ARG_REJECTED"},"tool_calls":[{"name":"unitconv_convert","arguments":{"value":10,"from":"km","to":"mi"}}]},
		{"expect":{"tool":"unitconv_convert","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"10 km is 6.21 mi"}}]}]`), &turns); err != nil {
		t.Fatal(err)
	}
	f := buildFixture(t, fixtureSetup{turns: turns})
	code, b := f.sendRaw(t, "PUT", "/v1/plugins/acme.impostor?sha256="+digest(impostor), keyAcme, "application/wasm", impostor)
	var eb server.ErrorBody
	_ = json.Unmarshal(b, &eb)
	if code != 422 || eb.Error.Code != server.CodePluginRejected || !strings.Contains(eb.Error.Message, "builtin_node_finish (a first-party builtin)") {
		t.Fatalf("impostor: %d %s", code, b)
	}
	if code, b := f.sendRaw(t, "PUT", "/v1/plugins/acme.unitconv?sha256="+digest(unitconv), keyAcme, "application/wasm", unitconv); code != 201 {
		t.Fatalf("install unitconv: %d %s", code, b)
	}
	sid := f.session(t, keyAcme)
	var res server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"how many miles is 10 km?"}`, &res); code != 200 || res.Task.Status != "DONE" {
		t.Fatalf("message: %d %+v %+v", code, eb, res.Task)
	}
	if !hasEvent(res.Events, "TOOL", "unitconv_convert", "REJECTED", "ARG_REJECTED") || !hasEvent(res.Events, "TOOL", "unitconv_convert", "SUCCESS", "") {
		t.Fatalf("events: %+v", res.Events)
	}
}

// TestTenantGuardTraps: a tenant guard that traps, attached with the
// default failure policy, fails the call closed in the service: the write is
// REJECTED PLUGIN_TRAP naming the guard, and the tool is never called.
func TestTenantGuardTraps(t *testing.T) {
	t.Parallel()
	guard := testdata.Bytes(t, "trapguard")
	turns := []mscripted.Turn{}
	if err := json.Unmarshal([]byte(`[
		{"tool_calls":[{"name":"query_space","arguments":{"spaceName":"市场部"}}]},
		{"expect":{"tool":"query_space","outcome":"SUCCESS"},"tool_calls":[{"name":"create_site","arguments":{"title":"spring.example.com"}}]},
		{"expect":{"tool":"create_site","outcome":"REJECTED","code":"PLUGIN_TRAP"},"tool_calls":[{"name":"builtin_node_fail","arguments":{"reason":"the guard failed"}}]}]`), &turns); err != nil {
		t.Fatal(err)
	}
	f := buildFixture(t, fixtureSetup{turns: turns, options: func(o *server.Options) { o.Directory = store.NewMemory() }})
	if code, b := f.sendRaw(t, "PUT", "/v1/plugins/trapguard?sha256="+digest(guard), keyAcme, "application/wasm", guard); code != 201 {
		t.Fatalf("install: %d %s", code, b)
	}
	contractText := contractWithGuard(t, map[string]any{"ref": "trapguard@1.0.0", "phase": "before", "position": "after:ParamContract", "config": map[string]any{"tool": "create_site"}})
	if code, eb := f.do(t, "PUT", "/v1/skills/site.builder", keyAcme, skillBody(t, contractText, "query_space", "query_site", "create_site"), nil); code != 201 {
		t.Fatalf("upload: %d %+v", code, eb)
	}
	sid := f.session(t, keyAcme)
	var res server.RunResult
	if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"在市场部空间建一个网站，标题叫 spring.example.com"}`, &res); code != 200 {
		t.Fatalf("message: %d %+v", code, eb)
	}
	var failed *server.Event
	for i, e := range res.Events {
		if string(e.Kind) == "TOOL" && e.Tool == "create_site" {
			failed = &res.Events[i]
		}
	}
	if failed == nil || failed.Outcome != "REJECTED" || failed.Name != "PLUGIN_TRAP" || failed.Guard != "trapguard@1.0.0" {
		t.Fatalf("create_site not failed closed by the trapping guard: %+v", res.Events)
	}
	if n := f.tools.Count("create_site"); n != 0 {
		t.Fatalf("create_site called %d times past a trapping guard", n)
	}
}

// TestTenantPluginKit: what `warden plugin test` catches is caught where a
// module goes into service: a guard that rejects a write without a next
// step is refused where a skill attaches it (with its config), and a
// builtin whose tool fails without one is refused at install.
func TestTenantPluginKit(t *testing.T) {
	t.Parallel()
	f := buildFixture(t, fixtureSetup{options: func(o *server.Options) { o.Directory = store.NewMemory() }})
	guard := testdata.Bytes(t, "writenonext")
	if code, b := f.sendRaw(t, "PUT", "/v1/plugins/writenonext?sha256="+digest(guard), keyAcme, "application/wasm", guard); code != 201 {
		t.Fatalf("install: %d %s", code, b)
	}
	contractText := contractWithGuard(t, map[string]any{"ref": "writenonext@1.0.0", "phase": "before", "position": "after:ParamContract"})
	code, eb := f.do(t, "PUT", "/v1/skills/site.builder", keyAcme, skillBody(t, contractText, "query_space", "query_site", "create_site"), nil)
	const guardWant = "skill site.builder: 8 problem(s): skill_contract.guards[0]: writenonext@1.0.0 fails the plugin kit's check probe/before/probe_write/empty-args: " +
		"plugin contract violation (PLUGIN_CONTRACT_VIOLATION): a non-success result without a next step: ARG_REJECTED; "
	if code != 400 || eb.Error.Code != server.CodeSkillInvalid || !strings.HasPrefix(eb.Error.Message, guardWant) {
		t.Fatalf("attaching a guard the kit fails: %d %s %q, want 400 %s %q…", code, eb.Error.Code, eb.Error.Message, server.CodeSkillInvalid, guardWant)
	}

	builtin := testdata.Bytes(t, "builtinnonext")
	code, b := f.sendRaw(t, "PUT", "/v1/plugins/builtinnonext?sha256="+digest(builtin), keyAcme, "application/wasm", builtin)
	var body server.ErrorBody
	_ = json.Unmarshal(b, &body)
	const builtinWant = "builtin builtinnonext: "
	if code != 422 || body.Error.Code != server.CodePluginRejected || !strings.HasPrefix(body.Error.Message, builtinWant) ||
		!strings.Contains(body.Error.Message, "builtinnonext@1.0.0 fails the plugin kit's check probe/") {
		t.Fatalf("installing a builtin the kit fails: %d %s", code, b)
	}
	var list struct{ Plugins []server.PluginInfo }
	if code, _ := f.do(t, "GET", "/v1/plugins", keyAcme, "", &list); code != 200 || len(list.Plugins) != 1 {
		t.Fatalf("plugins after the refusals: %d %+v", code, list)
	}
}
