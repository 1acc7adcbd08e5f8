package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestClientRegistry manages a tenant's plugins and skills through the
// client: install, list, show, attach, the refusals, delete; an admin key
// acts for the tenant --tenant names; skill import uploads a directory.
func TestClientRegistry(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t, approvalFile, 0)
	dir := t.TempDir()
	skill := filepath.Join(dir, "site.yaml")
	writeFile(t, skill, `skill_name: 建站
skill_manual: 先查询空间，再创建网站。
toolNames: [query_space, query_site, create_site]
skill_contract:
  tools:
    create_site:
      sideEffect: WRITE
      success: {path: code, op: EQ, value: 200}
  guards:
    - {ref: domaindeny@0.1.0, phase: before, position: "after:ParamContract", config: {deny: [evil.org], arg: title}}
`)
	broken := filepath.Join(dir, "broken.yaml")
	writeFile(t, broken, "skill_name: x\nskill_contract: {tools: {create_site: {sideEffect: WRITE}}}\ntoolNames: [nope]\n")
	store := filepath.Join(dir, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"skill_profile.yaml": "- {id: 1, skill_key: site.query, skill_name: 查询, skill_manual: 查询空间。, skill_contract: '{\"tools\":{}}', status: ACTIVE}\n" +
			"- {id: 2, skill_key: site.broken, skill_name: 坏, skill_contract: '{\"tools\":{\"create_site\":{\"sideEffect\":\"WRITE\"}}}', status: ACTIVE}\n",
		"skill_tool_binding.yaml": "- {skill_id: 1, tool_name: query_space, enabled_flag: 1}\n- {skill_id: 1, tool_name: query_site, enabled_flag: 0}\n",
	} {
		writeFile(t, filepath.Join(store, name), body)
	}
	dd := testdata.Bytes(t, "domaindeny")
	vars := map[string]string{"dd": testdata.Wasm(t, "domaindeny"), "caps": testdata.Wasm(t, "capsask"), "skill": skill, "broken": broken,
		"store": store, "dd12": host.Digest(dd)[:12], "digest": host.Digest(dd)}
	runSteps(t, f, vars, []clientStep{
		{"none yet", clientAcme, []string{"plugins", "list"}, 0, "no plugins\n", ""},
		{"install", clientAcme, []string{"plugins", "install", "{dd}"}, 0, "plugin domaindeny@0.1.0 installed for tenant acme: a guard, sha256 {dd12}\n", ""},
		{"install again", clientAcme, []string{"plugins", "install", "{dd}", "--sha256", "sha256:{digest}"}, 0,
			"plugin domaindeny@0.1.0 was installed already for tenant acme: a guard, sha256 {dd12}\n", ""},
		{"another name", clientAcme, []string{"plugins", "install", "--name", "other", "{dd}"}, 1, "",
			"warden: invalid_request: the module's manifest names it domaindeny, not other\n"},
		{"capabilities", clientAcme, []string{"plugins", "install", "{caps}"}, 1, "",
			"warden: capability_denied: plugin capsask asks for capabilities the tenant may not have: effect.node, state.conversation (tenant acme may have: none)\n"},
		{"another tenant's", clientGlobex, []string{"plugins", "show", "domaindeny"}, 1, "", "warden: plugin_not_found: no plugin domaindeny\n"},
		{"a skill that does not load", clientAcme, []string{"skills", "put", "site.builder", "{broken}"}, 1, "",
			"warden: skill_invalid: skill site.builder: 2 problem(s): skill_contract.tools.create_site.success: rule 6: WRITE tool without success: a WRITE tool must configure success; toolNames[0]: tool nope is not served by the agent's MCP servers\n"},
		{"attach", clientAcme, []string{"skills", "put", "site.builder", "{skill}"}, 0,
			"skill site.builder created (ACTIVE, tools query_space, query_site, create_site, guards domaindeny@0.1.0)\n", ""},
		{"skills", clientAcme, []string{"skills", "list"}, 0,
			"SKILL         NAME  STATUS  SOURCE  TOOLS                               GUARDS            UPDATED\n" +
				"site.builder  建站    ACTIVE  store   query_space,query_site,create_site  domaindeny@0.1.0  2026-12-01T09:30:00Z\n", ""},
		{"attached", clientAcme, []string{"plugins", "list"}, 0,
			"PLUGIN      VERSION  ROLE   DIGEST        STATUS    ATTACHED BY   INSTALLED\n" +
				"domaindeny  0.1.0    guard  {dd12}  attached  site.builder  2026-12-01T09:30:00Z\n", ""},
		{"show", clientAcme, []string{"plugins", "show", "domaindeny"}, 0,
			"plugin  domaindeny\ntenant  acme\n\n" +
				"VERSION  ROLE   DIGEST                                                            CAPABILITIES  STATUS    ATTACHED BY   INSTALLED             BY\n" +
				"0.1.0    guard  {digest}  none          attached  site.builder  2026-12-01T09:30:00Z  tenant\n", ""},
		{"delete while attached", clientAcme, []string{"plugins", "delete", "domaindeny"}, 1, "",
			"warden: plugin_attached: plugin domaindeny is attached by skills site.builder: detach it from them first\n"},
		{"the admin, for acme", clientAdmin, []string{"skills", "delete", "--tenant", "acme", "site.builder"}, 0, "skill site.builder deleted\n", ""},
		{"the admin without a tenant", clientAdmin, []string{"plugins", "list"}, 1, "",
			"warden: invalid_request: an admin key names the tenant it acts for: ?tenant=NAME\n"},
		{"delete", clientAcme, []string{"plugins", "delete", "domaindeny"}, 0, "plugin domaindeny deleted for tenant acme (1 version)\n", ""},
		{"import", clientAcme, []string{"skill", "import", "{store}"}, 1,
			"skill site.query created (ACTIVE, tools query_space)\n" +
				"skill site.broken refused: skill_invalid: skill site.broken: 1 problem(s): skill_contract.tools.create_site.success: rule 6: WRITE tool without success: a WRITE tool must configure success\n",
			"warden: 1 of 2 skills refused: site.broken\n"},
		{"the file skill, turned off", clientAcme, []string{"skills", "delete", "site.builder"}, 1, "",
			"warden: skill_from_files: skill site.builder comes from the server's skill directory; upload it with status INACTIVE to turn it off\n"},
	})
}
