package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/agentwarden/warden/internal/client"
	"github.com/agentwarden/warden/internal/skillstore"
)

// The tenant's plugins and skills (PUT/GET/DELETE /v1/plugins and
// /v1/skills): a tenant key acts for its tenant, an admin key for the
// tenant --tenant names.

// tenantOpts is the --tenant flag every registry command takes.
type tenantOpts struct{ tenant *string }

func (o tenantOpts) tenantName() string { return *o.tenant }

func tenantFlag(fs *flag.FlagSet) any { return &tenantOpts{tenant: fs.String("tenant", "", "")} }

type pluginInstallOpts struct {
	tenantOpts
	sha256, name *string
}

const tenantHelp = " (a tenant key; an admin key with --tenant NAME)"

var tenantPluginCommands = map[string]clientCommand{
	"list": {args: "[--tenant NAME]", help: "list the tenant's plugins: each version, its digest and the skills attaching it" + tenantHelp,
		run: tenantPluginsList, flags: tenantFlag},
	"show": {args: "[--tenant NAME] NAME", help: "show one of the tenant's plugins: versions, digests, capabilities, status" + tenantHelp,
		nargs: 1, run: tenantPluginsShow, flags: tenantFlag},
	"install": {args: "[--sha256 HEX] [--name NAME] [--tenant NAME] FILE.wasm", nargs: 1, run: tenantPluginsInstall,
		help: "install a guard or builtin module for the tenant, named as its manifest names it (--name, else the file's name without .wasm), pinned to --sha256 or else to the file's own digest" + tenantHelp,
		flags: func(fs *flag.FlagSet) any {
			return &pluginInstallOpts{tenantOpts: tenantOpts{tenant: fs.String("tenant", "", "")}, sha256: fs.String("sha256", "", ""), name: fs.String("name", "", "")}
		}},
	"delete": {args: "[--tenant NAME] NAME", help: "delete every version of one of the tenant's plugins; refused while a skill attaches it" + tenantHelp,
		nargs: 1, run: tenantPluginsDelete, flags: tenantFlag},
}

func tenantPluginsList(ctx context.Context, c *apiClient, _ []string, opts any) error {
	list, err := c.api.Plugins(ctx, opts.(*tenantOpts).tenantName())
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Plugins) == 0 {
		fmt.Fprintln(c.stdout, "no plugins")
		return nil
	}
	rows := [][]string{{"PLUGIN", "VERSION", "ROLE", "DIGEST", "STATUS", "ATTACHED BY", "INSTALLED"}}
	for _, p := range list.Plugins {
		for _, v := range p.Versions {
			rows = append(rows, []string{p.Name, v.Version, v.Role, short(v.Digest), v.Status, strings.Join(v.AttachedBy, ","), stamp(v.Installed)})
		}
	}
	c.table(rows)
	return nil
}

func tenantPluginsShow(ctx context.Context, c *apiClient, args []string, opts any) error {
	p, err := c.api.Plugin(ctx, args[0], opts.(*tenantOpts).tenantName())
	if done, err := printed(c, p, err); done || err != nil {
		return err
	}
	c.printPlugin(p)
	return nil
}

func (c *apiClient) printPlugin(p *client.Plugin) {
	c.fields("plugin", p.Name, "tenant", p.Tenant)
	fmt.Fprintln(c.stdout)
	rows := [][]string{{"VERSION", "ROLE", "DIGEST", "CAPABILITIES", "STATUS", "ATTACHED BY", "INSTALLED", "BY"}}
	for _, v := range p.Versions {
		caps := strings.Join(v.Capabilities, ",")
		if caps == "" {
			caps = "none"
		}
		rows = append(rows, []string{v.Version, v.Role, v.Digest, caps, v.Status, strings.Join(v.AttachedBy, ","), stamp(v.Installed), v.InstalledBy})
	}
	c.table(rows)
}

func tenantPluginsInstall(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*pluginInstallOpts)
	module, err := os.ReadFile(args[0])
	if err != nil {
		return usagef("the module: %v", err)
	}
	name := *o.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(args[0]), ".wasm")
	}
	// Pinned always: the given digest (a release's), else the file's own.
	pin := strings.TrimPrefix(*o.sha256, "sha256:")
	if pin == "" {
		sum := sha256.Sum256(module)
		pin = hex.EncodeToString(sum[:])
	}
	p, err := c.api.InstallPlugin(ctx, name, pin, module, o.tenantName())
	if done, err := printed(c, p, err); done || err != nil {
		return err
	}
	if len(p.Versions) == 0 {
		return errors.New("the answer to the install is not what the client reads: <nil>")
	}
	var v client.PluginVersion
	for _, x := range p.Versions {
		if x.Digest == pin {
			v = x
		}
	}
	verb := "installed"
	if p.Answer.Status == http.StatusOK {
		verb = "was installed already"
	}
	fmt.Fprintf(c.stdout, "plugin %s %s for tenant %s: a %s, sha256 %s\n", v.Ref, verb, p.Tenant, v.Role, short(v.Digest))
	return nil
}

func tenantPluginsDelete(ctx context.Context, c *apiClient, args []string, opts any) error {
	p, err := c.api.DeletePlugin(ctx, args[0], opts.(*tenantOpts).tenantName())
	if done, err := printed(c, p, err); done || err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "plugin %s deleted for tenant %s (%d version%s)\n", p.Name, p.Tenant, len(p.Versions), plural(len(p.Versions)))
	return nil
}

type skillImportOpts struct {
	tenantOpts
	agent *string
}

var skillCommands = map[string]clientCommand{
	"list": {args: "[--tenant NAME]", help: "list the tenant's skills in effect: uploaded ones and the skill directory's" + tenantHelp,
		run: skillsList, flags: tenantFlag},
	"show": {args: "[--tenant NAME] SKILL_KEY", help: "show one of the tenant's skills, its contract included" + tenantHelp,
		nargs: 1, run: skillsShow, flags: tenantFlag},
	"put": {args: "[--tenant NAME] SKILL_KEY FILE", nargs: 2, run: skillsPut, flags: tenantFlag,
		help: "upload a skill from FILE (YAML or JSON: skill_name, semantic_desc, skill_manual, skill_contract as text or an object, toolNames, status); every problem is listed when it does not load for the tenant; it takes effect with the next message" + tenantHelp},
	"delete": {args: "[--tenant NAME] SKILL_KEY", help: "delete an uploaded skill (a skill of the skill directory is turned off by putting it with status INACTIVE)" + tenantHelp,
		nargs: 1, run: skillsDelete, flags: tenantFlag},
	"import": {args: "[--agent CODE] [--tenant NAME] DIR", nargs: 1, run: skillsImport,
		help: "upload every skill of a skill-store directory (the agent's with --agent): each skill_profile row with its enabled skill_tool_binding rows; also warden skill import" + tenantHelp,
		flags: func(fs *flag.FlagSet) any {
			return &skillImportOpts{tenantOpts: tenantOpts{tenant: fs.String("tenant", "", "")}, agent: fs.String("agent", "", "")}
		}},
}

func skillsList(ctx context.Context, c *apiClient, _ []string, opts any) error {
	list, err := c.api.Skills(ctx, opts.(*tenantOpts).tenantName())
	if done, err := printed(c, list, err); done || err != nil {
		return err
	}
	if len(list.Skills) == 0 {
		fmt.Fprintln(c.stdout, "no skills")
		return nil
	}
	rows := [][]string{{"SKILL", "NAME", "STATUS", "SOURCE", "TOOLS", "GUARDS", "UPDATED"}}
	for _, s := range list.Skills {
		updated := ""
		if s.Updated != nil {
			updated = stamp(*s.Updated)
		}
		rows = append(rows, []string{s.SkillKey, oneLine(s.SkillName), s.Status, s.Source, strings.Join(s.ToolNames, ","), strings.Join(s.Guards, ","), updated})
	}
	c.table(rows)
	return nil
}

func skillsShow(ctx context.Context, c *apiClient, args []string, opts any) error {
	s, err := c.api.Skill(ctx, args[0], opts.(*tenantOpts).tenantName())
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	updated := ""
	if s.Updated != nil {
		updated = stamp(*s.Updated) + " by " + s.UpdatedBy
	}
	c.fields("skill", s.SkillKey, "name", s.SkillName, "description", s.SemanticDesc, "status", s.Status, "source", s.Source,
		"tools", strings.Join(s.ToolNames, ", "), "guards", strings.Join(s.Guards, ", "), "updated", updated)
	fmt.Fprintf(c.stdout, "\nmanual:\n%s\n\ncontract:\n%s\n", printable(s.SkillManual), printable(s.SkillContract))
	return nil
}

// skillFile is what skills put reads: the upload, with the contract as
// text or as an object.
type skillFile struct {
	SkillName     string          `json:"skill_name"`
	SemanticDesc  string          `json:"semantic_desc,omitempty"`
	SkillManual   string          `json:"skill_manual"`
	SkillContract json.RawMessage `json:"skill_contract"`
	ToolNames     []string        `json:"toolNames"`
	Status        string          `json:"status,omitempty"`
}

func skillsPut(ctx context.Context, c *apiClient, args []string, opts any) error {
	b, err := os.ReadFile(args[1])
	if err != nil {
		return usagef("the skill: %v", err)
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return usagef("the skill %s is not YAML or JSON: %v", args[1], err)
	}
	var f skillFile
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return usagef("the skill %s: %v", args[1], err)
	}
	up := client.SkillUpload{SkillName: f.SkillName, SemanticDesc: f.SemanticDesc, SkillManual: f.SkillManual, ToolNames: f.ToolNames, Status: f.Status}
	if raw := strings.TrimSpace(string(f.SkillContract)); strings.HasPrefix(raw, `"`) {
		_ = json.Unmarshal(f.SkillContract, &up.SkillContract)
	} else if raw != "" && raw != "null" {
		up.SkillContract = raw
	}
	return c.putSkill(ctx, args[0], up, opts.(*tenantOpts).tenantName())
}

func (c *apiClient) putSkill(ctx context.Context, key string, up client.SkillUpload, tenant string) error {
	s, err := c.api.PutSkill(ctx, key, up, tenant)
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	verb := "replaced"
	if s.Answer.Status == http.StatusCreated {
		verb = "created"
	}
	guards := ""
	if len(s.Guards) > 0 {
		guards = ", guards " + strings.Join(s.Guards, ", ")
	}
	tools := "no tools"
	if len(s.ToolNames) > 0 {
		tools = "tools " + strings.Join(s.ToolNames, ", ")
	}
	fmt.Fprintf(c.stdout, "skill %s %s (%s, %s%s)\n", s.SkillKey, verb, s.Status, tools, guards)
	return nil
}

func skillsDelete(ctx context.Context, c *apiClient, args []string, opts any) error {
	s, err := c.api.DeleteSkill(ctx, args[0], opts.(*tenantOpts).tenantName())
	if done, err := printed(c, s, err); done || err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "skill %s deleted\n", s.SkillKey)
	return nil
}

// skillsImport uploads the skills of a skill-store directory, each on its
// own: one refused does not stop the others, and makes the exit status 1.
func skillsImport(ctx context.Context, c *apiClient, args []string, opts any) error {
	o := opts.(*skillImportOpts)
	t, err := skillstore.NewDirStore(args[0]).All(ctx)
	if err != nil {
		return usagef("%v", err)
	}
	if *o.agent != "" {
		t = t.Filter(*o.agent)
		if len(t.Agents) == 0 {
			return usagef("no agent %s in %s", *o.agent, args[0])
		}
	}
	var refused []string
	seen := map[string]bool{}
	for _, sp := range t.Skills {
		if seen[sp.SkillKey] {
			continue
		}
		seen[sp.SkillKey] = true
		up := client.SkillUpload{SkillName: sp.SkillName, SemanticDesc: sp.SemanticDesc, SkillManual: sp.SkillManual, SkillContract: sp.SkillContract,
			Status: sp.Status, ToolNames: []string{}}
		for _, b := range t.SkillTools {
			if b.SkillID == sp.ID && b.EnabledFlag == 1 && b.ToolName != "" && !slices.Contains(up.ToolNames, b.ToolName) {
				up.ToolNames = append(up.ToolNames, b.ToolName)
			}
		}
		if err := c.putSkill(ctx, sp.SkillKey, up, o.tenantName()); err != nil {
			var ar *client.APIError
			if !errors.As(err, &ar) {
				return err
			}
			fmt.Fprintf(c.stdout, "skill %s refused: %s: %s\n", sp.SkillKey, ar.Code, ar.Message)
			refused = append(refused, sp.SkillKey)
		}
	}
	if len(seen) == 0 {
		return usagef("no skills in %s", args[0])
	}
	if len(refused) > 0 {
		return fmt.Errorf("%d of %d skills refused: %s", len(refused), len(seen), strings.Join(refused, ", "))
	}
	return nil
}
