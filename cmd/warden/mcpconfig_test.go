package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMCPServersConfig(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	token := f.file(t, "token", "s3cret\n")
	empty := f.file(t, "empty-token", "\n")
	base := []string{"--skills", f.skills, "--keys", f.keys, "--model", "scripted", "--model-script", f.script, "--tools", "mcp-servers"}
	tests := []struct {
		name    string
		servers string // the file's mcp-servers value, YAML
		env     map[string]string
		want    string // the error; "" for a valid list
	}{
		{name: "valid", servers: `
  - name: cms
    command: [mcp-cms, -page-size, "3"]
    env-allow: [CMS_TOKEN]
    env: [CMS_MODE=test]
    call-timeout: 20s
    roots: ["file:///srv/data"]
  - name: search
    url: https://search.example.com/mcp
    headers: {X-Tenant: acme}
    bearer-token-env: SEARCH_TOKEN
    connect-timeout: 5s
  - name: files
    url: http://127.0.0.1:9/mcp
    bearer-token-file: ` + token, env: map[string]string{"SEARCH_TOKEN": "t0k"}},
		{name: "command as a string", servers: `
  - name: cms
    command: mcp-cms -page-size 3`},
		{name: "no name", servers: `
  - command: [mcp-cms]`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server 1: name is required`},
		{name: "duplicate name", servers: `
  - {name: a, command: [x]}
  - {name: a, url: "http://h/mcp"}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: two servers are named "a"`},
		{name: "both", servers: `
  - {name: a, command: [x], url: "http://h/mcp"}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": set command or url, not both`},
		{name: "neither", servers: `
  - {name: a}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": command or url is required`},
		{name: "not http", servers: `
  - {name: a, url: "ftp://h"}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": url does not start with http:// or https://`},
		{name: "not http, credentials in the url not shown", servers: `
  - {name: a, url: "ftp://user:s3cret@h/?key=s3cret"}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": url does not start with http:// or https://`},
		{name: "headers on a command", servers: `
  - {name: a, command: [x], headers: {X: y}}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": headers and bearer tokens are for url servers`},
		{name: "env on a url", servers: `
  - {name: a, url: "http://h/mcp", env-allow: [HOME]}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": env-allow, env and dir are for command servers`},
		{name: "bad env entry", servers: `
  - {name: a, command: [x], env: [JUSTNAME]}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": env entry 1 is not KEY=VALUE`},
		{name: "bad env entry holding a secret: named by position", servers: `
  - {name: a, command: [x], env: [MODE=test, s3cret, =s3cret]}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": env entry 2 is not KEY=VALUE`},
		{name: "header value not a string", servers: `
  - {name: a, url: "http://h/mcp", headers: {X-Token: 12345}}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: not a list of servers: json: cannot unmarshal number into Go struct field mcpServer.headers of type string`},
		{name: "an object, not a list", servers: ` {name: a, url: "http://h/mcp", headers: {Authorization: Bearer s3cret}}`,
			want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: an object, not a list`},
		{name: "a string, not a list", servers: ` s3cret`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: a string, not a list`},
		{name: "a number, not a list", servers: ` 12345`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: a number, not a list`},
		{name: "token env empty", servers: `
  - {name: a, url: "http://h/mcp", bearer-token-env: NO_SUCH_TOKEN}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": bearer-token-env: NO_SUCH_TOKEN is empty`},
		{name: "token file empty", servers: `
  - {name: a, url: "http://h/mcp", bearer-token-file: ` + empty + `}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": bearer-token-file: ` + empty + ` is empty`},
		{name: "bad duration", servers: `
  - {name: a, command: [x], call-timeout: soon}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": call-timeout "soon" is not a positive duration`},
		{name: "bad root", servers: `
  - {name: a, command: [x], roots: ["http://h"]}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: server "a": root "http://h" is not a file:// URI`},
		{name: "unknown field", servers: `
  - {name: a, command: [x], token: y}`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: not a list of servers: json: unknown field "token"`},
		{name: "empty list", servers: ` []`, want: `--mcp-servers (WARDEN_MCP_SERVERS): file FILE key mcp-servers: the list is empty`},
		{name: "none", servers: ` ""`, want: `--mcp-servers (WARDEN_MCP_SERVERS): required with --tools mcp-servers`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := f.file(t, filepath.Base(t.Name())+".yaml", "mcp-servers:"+tc.servers+"\n")
			c, err := loadServeConfig(append(append([]string{}, base...), "--config", file), envOf(tc.env), io.Discard)
			want := tc.want
			if want != "" {
				want = strings.ReplaceAll(want, "FILE", file)
			}
			switch {
			case want == "" && err != nil:
				t.Fatalf("err = %v", err)
			case want != "" && (err == nil || err.Error() != want):
				t.Fatalf("err = %v, want %q", err, want)
			case err != nil && strings.Contains(err.Error(), "s3cret"):
				t.Fatalf("err = %v: shows a secret", err)
			case want != "":
				return
			}
			if tc.name != "valid" {
				if len(c.mcpServers) != 1 || len(c.mcpServers[0].Command) != 3 {
					t.Fatalf("servers %+v", c.mcpServers)
				}
				return
			}
			s := c.mcpServers
			if len(s) != 3 || s[0].Name != "cms" || s[0].CallTimeout != 20*time.Second || s[0].EnvAllow[0] != "CMS_TOKEN" ||
				s[0].Env[0] != "CMS_MODE=test" || s[0].Roots[0].URI != "file:///srv/data" || len(s[0].Command) != 3 {
				t.Fatalf("cms: %+v", s[0])
			}
			if s[1].URL != "https://search.example.com/mcp" || s[1].BearerToken != "t0k" || s[1].Headers["x-tenant"] != "acme" || s[1].ConnectTimeout != 5*time.Second {
				t.Fatalf("search: %+v", s[1])
			}
			if s[2].BearerToken != "s3cret" {
				t.Fatalf("files: token %q", s[2].BearerToken)
			}
		})
	}
}

// TestMCPServersFromEnv: the list can also be a JSON array in the variable.
func TestMCPServersFromEnv(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	args := []string{"--skills", f.skills, "--keys", f.keys, "--model", "scripted", "--model-script", f.script, "--tools", "mcp-servers"}
	c, err := loadServeConfig(args, envOf(map[string]string{"WARDEN_MCP_SERVERS": `[{"name":"cms","command":["mcp-cms"]}]`}), io.Discard)
	if err != nil || len(c.mcpServers) != 1 || c.mcpServers[0].Name != "cms" {
		t.Fatalf("servers %+v, err %v", c.mcpServers, err)
	}
	for _, tc := range []struct{ value, want string }{
		{`{"name":"cms","headers":{"Authorization":"Bearer s3cret"}}`, `--mcp-servers (WARDEN_MCP_SERVERS): env WARDEN_MCP_SERVERS: an object, not a list`},
		{`"s3cret"`, `--mcp-servers (WARDEN_MCP_SERVERS): env WARDEN_MCP_SERVERS: a string, not a list`},
		{`true`, `--mcp-servers (WARDEN_MCP_SERVERS): env WARDEN_MCP_SERVERS: a boolean, not a list`},
		{`12`, `--mcp-servers (WARDEN_MCP_SERVERS): env WARDEN_MCP_SERVERS: a number, not a list`},
		{`Bearer s3cret`, `--mcp-servers (WARDEN_MCP_SERVERS): env WARDEN_MCP_SERVERS: not JSON, not a list`},
		{`[{"name":"cms","command":["x"],"env":["A=1","s3cret"]}]`, `--mcp-servers (WARDEN_MCP_SERVERS): server "cms": env entry 2 is not KEY=VALUE`},
	} {
		_, err = loadServeConfig(args, envOf(map[string]string{"WARDEN_MCP_SERVERS": tc.value}), io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("WARDEN_MCP_SERVERS=%s: err = %v, want %q", tc.value, err, tc.want)
		}
	}
}
