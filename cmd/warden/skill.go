package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

const skillUsage = `usage: warden skill validate [--json] [--plugin [REF=]FILE]... [--plugins-dir DIR]
                             [--mcp-command "CMD ARGS" | --mcp-url URL] PATH
       warden skill import [--agent CODE] [--tenant NAME] --server URL --key KEY DIR

PATH is a skill_contract file (JSON, comments allowed; the skill_key is the
file name without its extension) or a skill-store directory (agent_profile,
skill_profile, agent_skill_binding and skill_tool_binding as .yaml, .yml or
.json). Every problem is printed; the exit code is 1 when a skill would be
dropped (or an agent is left without skills), 0 otherwise, 2 on usage errors.

A skill's tenant guards (its contract's guards) must resolve: each ref
(name@version or sha256:<hex>) must name a guard module given with --plugin
(FILE, or REF=FILE to check the module is REF) or found in --plugins-dir
(every *.wasm in it), the module must run in the guard's phase, and the
guard's config must pass the module's configSchema. A guard that does not
resolve is an error (rule W1, or W5 for its config): the skill would not
load where its modules are not installed.

With --mcp-command or --mcp-url the MCP server is asked for its tools, and
a tool a skill binds (every listed tool, for a single file) without a
contract whose annotations say it changes something is a warning: Warden
runs it as a WRITE with approval until a contract says otherwise.

skill import uploads the skills of a skill-store directory to a serving
warden, for the key's tenant (warden skills import --help).
`

// cmdSkill handles `warden skill ...`.
func cmdSkill(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "import" {
		// Uploads through the API: warden skills import.
		return cmdClient(ctx, "skills", args, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "validate" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, skillUsage)
			return 0
		}
		fmt.Fprint(stderr, skillUsage)
		return 2
	}
	fs := flag.NewFlagSet("warden skill validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, skillUsage) }
	asJSON := fs.Bool("json", false, "print machine-readable JSON")
	mcpCommand := fs.String("mcp-command", "", "the MCP server's command line")
	mcpURL := fs.String("mcp-url", "", "the MCP server's streamable HTTP endpoint")
	var pluginArgs []string
	fs.Func("plugin", "a tenant guard module, `[REF=]FILE` (repeatable)", func(v string) error {
		pluginArgs = append(pluginArgs, v)
		return nil
	})
	pluginsDir := fs.String("plugins-dir", "", "a directory of tenant guard modules (*.wasm)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, skillUsage)
		return 2
	}
	if *mcpCommand != "" && *mcpURL != "" {
		fmt.Fprintln(stderr, "warden skill validate: --mcp-command and --mcp-url are exclusive")
		return 2
	}
	guards, err := loadGuardModules(ctx, pluginArgs, *pluginsDir)
	if err != nil {
		fmt.Fprintf(stderr, "warden skill validate: %v\n", err)
		return 2
	}
	defer guards.close(ctx)
	rep, err := validatePath(ctx, fs.Arg(0), guards)
	if err != nil {
		fmt.Fprintf(stderr, "warden skill validate: %v\n", err)
		return 2
	}
	if *mcpCommand != "" || *mcpURL != "" {
		cfg := mcp.Config{Name: "mcp", Command: strings.Fields(*mcpCommand), URL: *mcpURL}
		if err := rep.annotations(ctx, fs.Arg(0), cfg); err != nil {
			fmt.Fprintf(stderr, "warden skill validate: %v\n", err)
			return 2
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "warden skill validate: %v\n", err)
			return 2
		}
	} else {
		rep.writeText(stdout)
	}
	if rep.Dropped > 0 || len(rep.AgentsWithoutSkills) > 0 {
		return 1
	}
	return 0
}

// validateReport is the result of `warden skill validate`, and its --json form.
type validateReport struct {
	Path                string        `json:"path"`
	Skills              []skillReport `json:"skills"`
	Checked             int           `json:"checked"`
	Dropped             int           `json:"dropped"`
	Warnings            int           `json:"warnings"`
	AgentsWithoutSkills []string      `json:"agentsWithoutSkills,omitempty"`
}

type skillReport struct {
	SkillKey string    `json:"skillKey"`
	Source   string    `json:"source,omitempty"`
	Loaded   bool      `json:"loaded"`
	Problems []problem `json:"problems"`
}

type problem struct {
	Severity string `json:"severity"` // error | warning
	Rule     string `json:"rule"`
	SkillKey string `json:"skillKey"`
	Path     string `json:"path"`
	Message  string `json:"message"`
}

func validatePath(ctx context.Context, path string, guards *guardModules) (*validateReport, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	rep := &validateReport{Path: path, Skills: []skillReport{}}
	if !info.IsDir() {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		key := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		rep.add(ctx, guards, key, path, src)
		return rep, nil
	}
	tables, err := skillstore.NewDirStore(path).All(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range tables.Skills {
		if s.Status != contract.StatusActive {
			continue
		}
		rep.add(ctx, guards, s.SkillKey, "skill_profile id "+string(s.ID), []byte(s.SkillContract))
	}
	loader := skillstore.NewLoader(staticStore{tables}, slog.New(slog.DiscardHandler))
	for _, a := range tables.Agents {
		if a.Status != contract.StatusActive {
			continue
		}
		if _, err := loader.Load(ctx, a.AgentCode); errors.Is(err, contract.ErrNoSkills) {
			rep.AgentsWithoutSkills = append(rep.AgentsWithoutSkills, a.AgentCode)
		}
	}
	return rep, nil
}

// staticStore serves tables already read.
type staticStore struct{ t contract.Tables }

func (s staticStore) AgentTables(_ context.Context, code string) (contract.Tables, error) {
	return s.t.Filter(code), nil
}

func (r *validateReport) add(ctx context.Context, guards *guardModules, key, source string, src []byte) {
	c, warns, err := contract.Parse(key, src)
	if err == nil && len(c.Guards) > 0 {
		if problems := guards.check(ctx, key, c.Guards); len(problems) > 0 {
			err = &contract.ValidationError{SkillKey: key, Problems: problems}
		}
	}
	sr := skillReport{SkillKey: key, Source: source, Loaded: err == nil, Problems: []problem{}}
	for _, p := range contract.Problems(err) {
		sr.Problems = append(sr.Problems, problem{"error", string(p.Rule), p.SkillKey, p.Path, p.Message()})
	}
	for _, w := range warns {
		sr.Problems = append(sr.Problems, problem{"warning", string(w.Rule), w.SkillKey, w.Path, w.Message})
	}
	r.Checked++
	r.Warnings += len(warns)
	if err != nil {
		r.Dropped++
	}
	r.Skills = append(r.Skills, sr)
}

func (r *validateReport) writeText(w io.Writer) {
	for _, s := range r.Skills {
		for _, p := range s.Problems {
			label := "ERROR"
			if p.Severity == "warning" {
				label = "WARN "
			}
			path := p.Path
			if path == "" {
				path = "(contract)"
			}
			fmt.Fprintf(w, "%s rule %-3s %s %s: %s\n", label, p.Rule, p.SkillKey, path, p.Message)
		}
	}
	for _, a := range r.AgentsWithoutSkills {
		fmt.Fprintf(w, "ERROR agent %s has no loadable skill: planning would fail\n", a)
	}
	fmt.Fprintf(w, "%d skill(s) checked, %d dropped, %d warning(s)\n", r.Checked, r.Dropped, r.Warnings)
}

// ruleAnnotations marks the warnings about tools whose server annotations
// make them writes because no contract speaks for them.
const ruleAnnotations = "mcp-annotations"

// annotations lists the server's tools and warns, per skill, about each
// bound tool the contract does not configure and the annotations make a
// write (tools.HintedWrites).
func (r *validateReport) annotations(ctx context.Context, path string, cfg mcp.Config) error {
	c, err := mcp.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	listed, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	bound := map[string][]string{} // skill key -> tool names
	parsed := map[string]*contract.Contract{}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		tables, err := skillstore.NewDirStore(path).All(ctx)
		if err != nil {
			return err
		}
		loader := skillstore.NewLoader(staticStore{tables}, slog.New(slog.DiscardHandler))
		for _, a := range tables.Agents {
			agent, err := loader.Load(ctx, a.AgentCode)
			if err != nil {
				continue // reported above
			}
			for _, sk := range agent.Skills {
				bound[sk.Profile.SkillKey], parsed[sk.Profile.SkillKey] = sk.ToolNames, sk.Contract
			}
		}
	} else if len(r.Skills) == 1 {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		key := r.Skills[0].SkillKey
		if parsed[key], _, err = contract.Parse(key, src); err != nil {
			return nil // the contract's own errors are reported above
		}
		for _, t := range listed {
			bound[key] = append(bound[key], t.Name)
		}
	}
	byName := map[string]tools.Tool{}
	for _, t := range listed {
		byName[t.Name] = t
	}
	for i := range r.Skills {
		sr := &r.Skills[i]
		for _, n := range tools.HintedWrites(parsed[sr.SkillKey], bound[sr.SkillKey], listed) {
			sr.Problems = append(sr.Problems, problem{"warning", ruleAnnotations, sr.SkillKey, "tools." + n,
				fmt.Sprintf("tool %s has no contract and its server annotates it as a write (%s): it runs as a WRITE with approval; configure it to say how", n, hintOf(byName[n]))})
			r.Warnings++
		}
	}
	return nil
}

// hintOf names the annotation that makes a tool a write.
func hintOf(t tools.Tool) string {
	if t.Annotations != nil && t.Annotations.ReadOnlyHint != nil {
		return "readOnlyHint false"
	}
	return "destructiveHint true"
}

// guardModules are the tenant guard modules skill validate resolves guard
// refs against (--plugin, --plugins-dir), installed in a registry as a
// tenant's would be.
type guardModules struct {
	reg   *chain.Registry
	h     *host.Host
	given bool
}

// loadGuardModules installs the modules named by --plugin ([REF=]FILE) and
// found in --plugins-dir (*.wasm; builtins there are skipped). A module
// that does not verify, is not a guard (--plugin), or is not the REF it is
// given as is an error.
func loadGuardModules(ctx context.Context, plugins []string, dir string) (*guardModules, error) {
	g := &guardModules{reg: &chain.Registry{}, given: len(plugins) > 0 || dir != ""}
	if !g.given {
		return g, nil
	}
	h, err := host.New(host.Options{})
	if err != nil {
		return nil, err
	}
	g.h, g.reg.Host = h, h
	type entry struct {
		ref, file  string
		skipOthers bool
	}
	var entries []entry
	for _, p := range plugins {
		ref, file, ok := strings.Cut(p, "=")
		if !ok {
			ref, file = "", p
		}
		if file == "" {
			return nil, fmt.Errorf("--plugin %q: want [REF=]FILE", p)
		}
		entries = append(entries, entry{ref: ref, file: file})
	}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("--plugins-dir %s: no *.wasm", dir)
		}
		for _, f := range files {
			entries = append(entries, entry{file: f, skipOthers: true})
		}
	}
	for _, e := range entries {
		src, err := host.ReadSource(e.file, "")
		if err != nil {
			return nil, err
		}
		// The modules' capabilities are the installer's grant to check, not
		// the skill's: validate grants what each asks.
		m, digest, err := h.Verify(ctx, src, host.Policy{PoolSize: 1})
		var ge *host.GrantError
		if errors.As(err, &ge) {
			m, digest, err = h.Verify(ctx, src, host.Policy{PoolSize: 1, Capabilities: ge.Asked})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.file, err)
		}
		if m.Role != abi.RoleGuard {
			if e.skipOthers {
				continue
			}
			return nil, fmt.Errorf("%s: %s is a %s, not a guard", e.file, chain.Ref(m), m.Role)
		}
		if e.ref != "" && e.ref != chain.Ref(m) && e.ref != "sha256:"+digest {
			return nil, fmt.Errorf("--plugin %s=%s: the module is %s (sha256:%s)", e.ref, e.file, chain.Ref(m), digest)
		}
		if _, err := g.reg.Install(ctx, "", src, m.Capabilities...); err != nil {
			return nil, fmt.Errorf("%s: %w", e.file, err)
		}
	}
	return g, nil
}

// check resolves and loads a skill's guards: their refs, phases and
// configs. Without modules every guard is unresolved.
func (g *guardModules) check(ctx context.Context, key string, guards []contract.Guard) []*contract.LoadError {
	_, problems := g.reg.Attach(ctx, "", key, guards)
	if !g.given {
		for _, p := range problems {
			p.Detail += "; name its module with --plugin [REF=]FILE or --plugins-dir DIR"
		}
	}
	return problems
}

func (g *guardModules) close(ctx context.Context) {
	g.reg.Close(ctx)
	if g.h != nil {
		_ = g.h.Close(ctx)
	}
}
