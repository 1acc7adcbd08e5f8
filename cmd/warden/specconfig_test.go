package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/loop"
)

// The spec's settings default to the spec's values, and the platform
// identity comes in the default headers from gateway keys only.
func TestSpecConfigDefaults(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	c, err := loadServeConfig(f.base, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%+v", c.spec.loop), fmt.Sprintf("%+v", loop.DefaultConfig()); got != want {
		t.Fatalf("loop\ngot  %s\nwant %s", got, want)
	}
	if s := c.spec.state; s.FingerprintLimit != 3 || s.BypassTools != nil || s.RepeatTools != nil || len(c.spec.agentSettings) != 0 {
		t.Fatalf("state %+v agents %+v", s, c.spec.agentSettings)
	}
	p := c.spec.platform
	h, _ := json.Marshal(p.Headers)
	if string(h) != `{"deptPath":"X-Platform-Dept-Path","memberId":"X-Platform-Member-Id","name":"X-Platform-Name","organId":"X-Platform-Organ-Id",`+
		`"organName":"X-Platform-Organ-Name","organType":"X-Platform-Organ-Type","userId":"X-Platform-User-Id"}` ||
		strings.Join(p.Hidden, ",") != "passportId,clientId,sessionType,adminUser,adminCompany" || p.GatewayKeys != nil {
		t.Fatalf("platform %+v", p)
	}
}

// Every spec key can be set in a config file, per agent too; an agent's
// item replaces only the keys it gives.
func TestSpecConfigFile(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	keys := f.file(t, "keys.json", `{"tenants":[{"tenant":"acme","agent":"cms","keys":["acme-key-0123456789"],"gateway_keys":["acme-gateway-0123456789"]},`+
		`{"tenant":"sales","agent":"Sales_Bot","keys":["sales-key-0123456789"]}]}`)
	path := f.file(t, "warden.yaml", `write-confirm-bypass-tools: [create_site]
reconfirm-after: 2h
delegate-max-depth: 3
fingerprint-limit: 4
repeat-tools: [query_site]
locale: en
no-progress-limit: 6
max-rounds: 30
agents:
  - agent: cms
    locale: zh
    max-rounds: 12
    write-confirm-bypass-tools: []
  - {agent: Sales_Bot, reconfirm-after: 30m}
platform-header-user-id: X-User-Id
platform-hidden: [passportId, clientId, sessionType, adminUser, adminCompany, organType]
`)
	c, err := loadServeConfig(append(f.with("--keys", keys), "--config", path), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	show := func(a server.AgentSettings) string {
		l := a.Loop
		return fmt.Sprintf("%d %d %d %s %s %v %d %v", l.NoProgressLimit, l.MaxRounds, l.DelegateMaxDepth, l.ReconfirmAfter, l.Locale,
			a.State.BypassTools, a.State.FingerprintLimit, a.State.RepeatTools)
	}
	for _, tt := range []struct {
		name string
		got  server.AgentSettings
		want string
	}{
		{"defaults", server.AgentSettings{Loop: c.spec.loop, State: c.spec.state}, "6 30 3 2h0m0s en [create_site] 4 [query_site]"},
		{"cms", c.spec.agentSettings["cms"], "6 12 3 2h0m0s zh-CN [] 4 [query_site]"},
		{"Sales_Bot", c.spec.agentSettings["Sales_Bot"], "6 30 3 30m0s en [create_site] 4 [query_site]"},
	} {
		if got := show(tt.got); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
	p := c.spec.platform
	if p.Headers["userId"] != "X-User-Id" || p.Headers["deptPath"] != "X-Platform-Dept-Path" || p.Headers["organType"] != "" || len(p.Headers) != 6 ||
		strings.Join(p.GatewayKeys, ",") != "acme-gateway-0123456789" {
		t.Fatalf("platform %+v", p)
	}
}

// A bad spec setting stops serve at start, naming the key.
func TestSpecConfigErrors(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	agents := func(body string) string { return f.file(t, fmt.Sprintf("agents-%d.yaml", len(body)), "agents:\n"+body) }
	badAgentLocale := agents("  - {agent: cms, locale: fr}\n")
	twice := agents("  - {agent: cms}\n  - {agent: cms}\n")
	unknown := agents("  - {agent: cms, max-round: 3}\n")
	noCode := agents("  - {max-rounds: 3}\n")
	badDur := agents("  - {agent: cms, reconfirm-after: soon}\n")
	nobody := agents("  - {agent: cms-editor}\n")
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"zero reconfirm", f.with("--reconfirm-after", "0s"), nil, "--reconfirm-after (WARDEN_RECONFIRM_AFTER): 0s is not positive"},
		{"zero depth", f.with("--delegate-max-depth", "0"), nil, "--delegate-max-depth (WARDEN_DELEGATE_MAX_DEPTH): 0 is less than 1"},
		{"zero fingerprint", f.base, map[string]string{"WARDEN_FINGERPRINT_LIMIT": "0"}, "--fingerprint-limit (WARDEN_FINGERPRINT_LIMIT): 0 is less than 1"},
		{"zero no-progress", f.with("--no-progress-limit", "0"), nil, "--no-progress-limit (WARDEN_NO_PROGRESS_LIMIT): 0 is less than 1"},
		{"zero rounds", f.with("--max-rounds", "0"), nil, "--max-rounds (WARDEN_MAX_ROUNDS): 0 is less than 1"},
		{"rounds not a number", f.with("--max-rounds", "many"), nil, `--max-rounds (WARDEN_MAX_ROUNDS): flag --max-rounds: "many" is not an integer`},
		{"bad locale", f.with("--locale", "fr"), nil, `--locale (WARDEN_LOCALE): "fr" is not zh, zh-CN or en`},
		{"bypass not a list", f.with("--write-confirm-bypass-tools", "create_site"), nil,
			"--write-confirm-bypass-tools (WARDEN_WRITE_CONFIRM_BYPASS_TOOLS): flag --write-confirm-bypass-tools: not JSON, not a list"},
		{"bypass of numbers", f.with("--write-confirm-bypass-tools", "[1]"), nil, "--write-confirm-bypass-tools (WARDEN_WRITE_CONFIRM_BYPASS_TOOLS): not a list of strings"},
		{"repeat twice", f.with("--repeat-tools", `["a","a"]`), nil, `--repeat-tools (WARDEN_REPEAT_TOOLS): tool "a" is empty or listed twice`},
		{"agent locale", f.with("--config", badAgentLocale), nil, "--agents (WARDEN_AGENTS): file " + badAgentLocale + ` key agents: agents[0] (cms): locale: "fr" is not zh, zh-CN or en`},
		{"agent twice", f.with("--config", twice), nil, "--agents (WARDEN_AGENTS): file " + twice + ` key agents: agents[1]: agent "cms" is listed twice`},
		{"agent unknown key", f.with("--config", unknown), nil, "--agents (WARDEN_AGENTS): file " + unknown + ` key agents: agents[0]: unknown key "max-round" in $`},
		{"agent without code", f.with("--config", noCode), nil, "--agents (WARDEN_AGENTS): file " + noCode + " key agents: agents[0]: agent (the agent_code) is required"},
		{"agent bad duration", f.with("--config", badDur), nil, "--agents (WARDEN_AGENTS): file " + badDur + ` key agents: agents[0] (cms): reconfirm-after: "soon" is not a duration`},
		{"agent of no tenant", f.with("--config", nobody), nil, "--agents (WARDEN_AGENTS): file " + nobody + ` key agents: agents[0]: agent "cms-editor" is no tenant's agent in --keys: its settings would never be used`},
		{"hidden dropped", f.with("--platform-hidden", `["passportId"]`), nil,
			"--platform-hidden (WARDEN_PLATFORM_HIDDEN): clientId must stay hidden (CONTRACT_SPEC §11): the list may add open fields, not drop these: passportId, clientId, sessionType, adminUser, adminCompany"},
		{"hidden unknown", f.with("--platform-hidden", `["passportId","clientId","sessionType","adminUser","adminCompany","tenant"]`), nil,
			`--platform-hidden (WARDEN_PLATFORM_HIDDEN): "tenant" is not a field of the login identity (open: userId, memberId, name, organId, organName, organType, deptPath; hidden by the spec: passportId, clientId, sessionType, adminUser, adminCompany)`},
		{"header of a hidden field", f.with("--platform-hidden", `["passportId","clientId","sessionType","adminUser","adminCompany","deptPath"]`, "--platform-header-dept-path", "X-Dept"), nil,
			"--platform-header-dept-path (WARDEN_PLATFORM_HEADER_DEPT_PATH): platform.deptPath is in platform-hidden: no header may carry it"},
		{"bad header", f.with("--platform-header-user-id", "X User"), nil, `--platform-header-user-id (WARDEN_PLATFORM_HEADER_USER_ID): "X User" is not a header name a gateway may set`},
		{"authorization header", f.with("--platform-header-name", "authorization"), nil, `--platform-header-name (WARDEN_PLATFORM_HEADER_NAME): "authorization" is not a header name a gateway may set`},
		{"one header twice", f.with("--platform-header-name", "x-platform-user-id"), nil, `--platform-header-name (WARDEN_PLATFORM_HEADER_NAME): "x-platform-user-id" is platform-header-user-id's header too`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(tt.args, envOf(tt.env), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// warden serve end to end: a trusted gateway's key passes the login
// identity in a header and platform.deptPath binds the call's spaceId
// over the model's; the same header on the tenant's other key is refused;
// the agent's locale (--agents) is the one its texts are in.
func TestServePlatformAndSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	skills, _, _ := serveFixture(t)
	dir := t.TempDir()
	profile := filepath.Join(skills, "skill_profile.yaml")
	b, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, profile, strings.Replace(string(b), "        label: Look up a space\n",
		"        label: Look up a space\n        args:\n          spaceId: {from: platform.deptPath, label: Space}\n", 1))
	const gatewayKey = "acme-gateway-0123456789"
	keys := filepath.Join(dir, "keys.json")
	writeFile(t, keys, `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+tenantKey+`"],"gateway_keys":["`+gatewayKey+`"]}]}`)
	script := filepath.Join(dir, "script.json")
	writeFile(t, script, `[{"tool_calls":[{"name":"query_space","arguments":{"spaceId":"sp-404"}}]},
		{"expect":{"tool":"query_space","outcome":"SUCCESS"},"tool_calls":[{"name":"builtin_node_finish","arguments":{"output":"found Marketing"}}]}]`)
	base, _ := startServe(t, []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted", "--model-script", script,
		"--tools", "mcp-command", "--mcp-command", bin, "--native", "--platform-header-dept-path", "X-Dept",
		"--agents", `[{"agent":"cms","locale":"en"}]`})
	call := func(key, path, body string, header map[string]string, out any) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	var sess struct{ ID string }
	if code := call(gatewayKey, "/v1/sessions", "", nil, &sess); code != http.StatusCreated {
		t.Fatalf("session: %d", code)
	}
	var refused server.ErrorBody
	if code := call(tenantKey, "/v1/sessions/"+sess.ID+"/messages?wait=5m", `{"text":"find my space"}`, map[string]string{"X-Dept": "sp-1"}, &refused); code != http.StatusForbidden ||
		refused.Error.Code != "platform_untrusted" || refused.Error.Message != "header X-Dept carries the login identity, which only a trusted gateway's key may pass" {
		t.Fatalf("a tenant key with the identity header: %d %+v", code, refused)
	}
	var res server.RunResult
	if code := call(gatewayKey, "/v1/sessions/"+sess.ID+"/messages?wait=5m", `{"text":"find my space"}`, map[string]string{"X-Dept": "sp-1"}, &res); code != http.StatusOK ||
		res.Task.Status != "DONE" {
		t.Fatalf("message: %d %+v", code, res.Task)
	}
	for _, e := range res.Events {
		if e.Kind == loop.KindTool && e.Tool == "query_space" {
			if e.Outcome != abi.OutcomeSuccess.String() || e.Message != "tool query_space succeeded" || !strings.Contains(e.Sent, `{"name":"Marketing","spaceId":"sp-1","websiteCount":1}`) {
				t.Fatalf("query_space %q %q %+v", e.Message, e.Sent, e)
			}
			return
		}
	}
	t.Fatalf("no query_space event in %+v", res.Events)
}
