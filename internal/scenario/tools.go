package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/catalog"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
)

var faultKinds = map[string]tscripted.FaultKind{
	"none": tscripted.None, "timeout": tscripted.Timeout, "unreachable": tscripted.Unreachable,
	"error": tscripted.Error, "iserror": tscripted.IsError, "business": tscripted.Business,
	"empty": tscripted.Empty, "partial": tscripted.Partial, "commit-then-timeout": tscripted.CommitThenTimeout,
}

// canned answers a scripted tool's calls from a queue, the last repeating.
func canned(bodies []json.RawMessage) tscripted.Handler {
	var mu sync.Mutex
	next := 0
	return func(*tscripted.State, json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) == 0 {
			return json.RawMessage(`{"code":200,"msg":"ok","data":null}`), nil
		}
		b := bodies[min(next, len(bodies)-1)]
		next++
		return b, nil
	}
}

func scriptedServer(ts []ScriptedTool) *tscripted.Server {
	var out []tscripted.Tool
	for _, t := range ts {
		st := tscripted.Tool{Tool: tools.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Schema},
			Write: t.Write, Handler: canned(t.Responses)}
		for _, f := range t.Faults {
			d, _ := time.ParseDuration(f.Delay)
			st.Faults = append(st.Faults, tscripted.Fault{Kind: faultKinds[f.Kind], Delay: d, Text: f.Text, Body: f.Body})
		}
		out = append(out, st)
	}
	return tscripted.New(nil, out...)
}

// router sends a call to the scripted tools when they have it, else to MCP.
type router struct {
	scripted map[string]bool
	local    *tscripted.Server
	remote   remote
}

// remote is the scenario's MCP servers: one client, or mcp.Servers.
type remote interface {
	tools.Provider
	Close() error
}

func (r *router) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	if r.scripted[name] || r.remote == nil {
		return r.local.CallTool(ctx, name, args)
	}
	return r.remote.CallTool(ctx, name, args)
}

// liveDefs follows the MCP servers' tool lists (list_changed) for a
// skill; the scripted tools' definitions never change. nil without MCP.
func liveDefs(rt *router, sk *skillstore.Skill, served []tools.Tool) func() []catalog.BusinessTool {
	live, ok := rt.remote.(tools.Live)
	if !ok {
		return nil
	}
	remote := tools.LiveDefinitions(live, sk, served)
	var scripted []catalog.BusinessTool
	lts, _ := rt.local.ListTools(context.Background())
	for _, t := range lts {
		if slices.Contains(sk.ToolNames, t.Name) {
			scripted = append(scripted, tools.Definition(t))
		}
	}
	return func() []catalog.BusinessTool { return append(slices.Clone(scripted), remote()...) }
}

// moduleRoot is the directory with go.mod at or above dir.
func moduleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = up
	}
}

// builds caches binaries built from Go packages for the process's life.
var builds = struct {
	sync.Mutex
	dir  string
	bins map[string]string
}{bins: map[string]string{}}

// build builds pkg (relative to root) once per process.
func build(ctx context.Context, root, pkg string) (string, error) {
	builds.Lock()
	defer builds.Unlock()
	key := filepath.Join(root, pkg)
	if p, ok := builds.bins[key]; ok {
		return p, nil
	}
	if builds.dir == "" {
		d, err := os.MkdirTemp("", "warden-scenario-")
		if err != nil {
			return "", err
		}
		builds.dir = d
	}
	out := filepath.Join(builds.dir, fmt.Sprintf("bin%d", len(builds.bins)))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", pkg, err, b)
	}
	builds.bins[key] = out
	return out, nil
}

// dialMCP starts or connects to the scenario's MCP server, or its servers.
func dialMCP(ctx context.Context, ts Tools, file string) (remote, error) {
	if ts.MCP != nil {
		cfg, err := mcpConfig(ctx, ts.MCP, file)
		if err != nil {
			return nil, err
		}
		c, err := mcp.Dial(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	var cfgs []mcp.Config
	for i := range ts.MCPServers {
		cfg, err := mcpConfig(ctx, &ts.MCPServers[i], file)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", ts.MCPServers[i].Name, err)
		}
		cfgs = append(cfgs, cfg)
	}
	s, err := mcp.DialAll(ctx, cfgs)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// mcpConfig is one server's client configuration; a Go package is built.
func mcpConfig(ctx context.Context, m *MCP, file string) (mcp.Config, error) {
	cfg := mcp.Config{Name: "scenario"}
	if m.Name != "" {
		cfg.Name = m.Name
	}
	switch {
	case m.URL != "":
		cfg.URL = m.URL
	default:
		root, err := moduleRoot(filepath.Dir(file))
		if err != nil {
			return cfg, err
		}
		cfg.Dir = root
		// The server sees the base environment and the scenario's env only.
		cfg.Env, cfg.EnvAllow = m.Env, m.EnvAllow
		if m.Build != "" {
			bin, err := build(ctx, root, m.Build)
			if err != nil {
				return cfg, err
			}
			cfg.Command = append([]string{bin}, m.Args...)
		} else {
			cfg.Command = append(append([]string(nil), m.Command...), m.Args...)
		}
	}
	return cfg, nil
}
