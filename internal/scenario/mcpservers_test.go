package scenario

import (
	"errors"
	"strings"
	"testing"
)

const serversHead = `name: servers
user: hi
skills:
  - skill_key: k
    toolNames: [query_space]
    contract: {}
model:
  - text: done
`

func TestMCPServersFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		tools string
		want  string
	}{
		{"both forms", "tools:\n  mcp: {build: ./examples/mcp-cms}\n  mcpServers:\n    - {name: a, build: ./examples/mcp-cms}\n", "tools: mcp and mcpServers are exclusive"},
		{"no name", "tools:\n  mcpServers:\n    - {build: ./examples/mcp-cms}\n", "tools.mcpServers[0]: name is required"},
		{"same name", "tools:\n  mcpServers:\n    - {name: a, build: ./examples/mcp-cms}\n    - {name: a, url: 'http://h/mcp'}\n", `tools.mcpServers: two servers are named "a"`},
		{"no source", "tools:\n  mcpServers:\n    - {name: a}\n", "tools.mcpServers[0]: exactly one of build, command, url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(serversHead + tc.tools))
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to end %q", err, tc.want)
			}
		})
	}
	s, err := Parse([]byte(serversHead + "tools:\n  mcpServers:\n    - {name: a, build: ./examples/mcp-cms, envAllow: [X]}\n    - {name: b, url: 'http://h/mcp'}\n"))
	if err != nil || len(s.Tools.MCPServers) != 2 || s.Tools.MCPServers[0].EnvAllow[0] != "X" || s.Tools.MCPServers[1].Name != "b" {
		t.Fatalf("parsed %+v, %v", s.Tools, err)
	}
}

// TestMCPServersCollide: two servers offering the same tool names stop the
// scenario at setup, naming both.
func TestMCPServersCollide(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(serversHead + "tools:\n  mcpServers:\n    - {name: cms, build: ./examples/mcp-cms}\n    - {name: again, build: ./examples/mcp-cms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.File = "testdata/servers.yaml"
	_, err = Run(t.Context(), s, Options{})
	if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), `"admin_reset" is offered by servers "cms" and "again"`) {
		t.Fatalf("err = %v", err)
	}
}
