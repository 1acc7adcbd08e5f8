package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/server"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// The spec's settings reach a session: the defaults (Options.Loop and
// Options.State) for every agent, replaced whole by the settings of the
// session's agent. Here create_site has confirm: false; it runs without
// approval only where state.write-confirm-bypass-tools lists it (§14.1),
// and the texts the model reads follow the agent's locale.
func TestAgentSettings(t *testing.T) {
	t.Parallel()
	turns := func(last string) []mscripted.Turn {
		return []mscripted.Turn{
			{ToolCalls: []mscripted.Call{{Name: "query_space", Arguments: `{"spaceName":"市场部"}`}}},
			{ToolCalls: []mscripted.Call{{Name: "create_site", Arguments: `{"title":"Spring Launch"}`}}},
			{ToolCalls: []mscripted.Call{{Name: last, Arguments: map[string]string{
				"builtin_node_finish":   `{"output":"网站 Spring Launch 已创建"}`,
				"builtin_node_approval": `{"summary":"创建网站 Spring Launch","toolName":"create_site"}`}[last]}}},
		}
	}
	en := loop.DefaultConfig()
	en.Locale = abi.LocaleEN
	for _, tt := range []struct {
		name   string
		agent  string
		status string
		writes int
		text   string // the create_site event's message starts so
	}{
		{"the defaults: approval", "other_agent", "SUSPENDED", 0, "该写操作须经用户确认"},
		{"the agent's: bypassed, in English", "site_agent", "DONE", 1, "tool create_site succeeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := buildFixture(t, fixtureSetup{
				contract: func(c string) string {
					return strings.Replace(c, `"sideEffect":"WRITE"`, `"sideEffect":"WRITE","confirm":false`, 1)
				},
				turns: turns(map[string]string{"SUSPENDED": "builtin_node_approval", "DONE": "builtin_node_finish"}[tt.status]),
				options: func(o *server.Options) {
					agents := o.Agents
					o.Agents = agentsFunc(func(ctx context.Context, tenant string) (server.Agent, error) {
						a, err := agents.Agent(ctx, tenant)
						a.Profile.AgentCode = tt.agent
						return a, err
					})
					o.State = server.StateSettings{RepeatTools: []string{"query_site"}}
					o.AgentSettings = map[string]server.AgentSettings{"site_agent": {Loop: en,
						State: server.StateSettings{BypassTools: []string{"create_site"}}}}
				},
			})
			sid := f.session(t, keyAcme)
			var res server.RunResult
			if code, eb := f.do(t, "POST", "/v1/sessions/"+sid+"/messages?wait=5m", keyAcme, `{"text":"帮我在市场部空间建一个网站，标题叫 Spring Launch"}`, &res); code != http.StatusOK {
				t.Fatalf("message: %d %+v", code, eb)
			}
			if string(res.Task.Status) != tt.status || f.tools.Count("create_site") != tt.writes {
				t.Fatalf("task %+v, %d writes", res.Task, f.tools.Count("create_site"))
			}
			var msg string
			for _, e := range res.Events {
				if e.Kind == loop.KindTool && e.Tool == "create_site" {
					msg = e.Message
				}
			}
			if !strings.HasPrefix(msg, tt.text) {
				t.Fatalf("create_site event %q, want it to start with %q", msg, tt.text)
			}
		})
	}
}

// Settings out of range are refused by New, naming the agent.
func TestAgentSettingsRefused(t *testing.T) {
	t.Parallel()
	bad := loop.DefaultConfig()
	bad.NoProgressLimit = 0
	for _, tt := range []struct {
		name string
		o    func(*server.Options)
		want string
	}{
		{"agent loop", func(o *server.Options) { o.AgentSettings = map[string]server.AgentSettings{"a1": {Loop: bad}} },
			"server: invalid options: agent a1: loop: no-progress limit 0: invalid loop config"},
		{"agent fingerprint limit", func(o *server.Options) {
			o.AgentSettings = map[string]server.AgentSettings{"a1": {Loop: loop.DefaultConfig(), State: server.StateSettings{FingerprintLimit: -1}}}
		}, "server: invalid options: agent a1: fingerprint limit -1 is negative"},
		{"empty agent code", func(o *server.Options) {
			o.AgentSettings = map[string]server.AgentSettings{"": {Loop: loop.DefaultConfig()}}
		},
			"server: invalid options: agent settings for an empty agent code"},
		{"empty bypass tool", func(o *server.Options) { o.State.BypassTools = []string{""} },
			"server: invalid options: write-confirm bypass tools: an empty tool name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := server.Options{Keys: map[string]string{keyAcme: "acme"}, Agents: agentsFunc(nil), Tools: tscripted.New(nil),
				NewModel: func(string, string) (model.Model, error) { return mscripted.New(nil) }, Loop: loop.DefaultConfig()}
			tt.o(&o)
			if _, err := server.New(o); err == nil || err.Error() != tt.want {
				t.Fatalf("err %v, want %s", err, tt.want)
			}
		})
	}
}
