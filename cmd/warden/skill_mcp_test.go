package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSkillValidateAnnotations: with the MCP server at hand, a bound tool
// without a contract that the server annotates as a write is a warning; a
// tool the contract configures, or a read, is not.
func TestSkillValidateAnnotations(t *testing.T) {
	t.Parallel()
	cms := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	dir := t.TempDir()
	files := map[string]string{
		"agent_profile.json":       `[{"id":1,"agent_code":"a","status":"ACTIVE"}]`,
		"skill_profile.json":       `[{"id":2,"skill_key":"k","status":"ACTIVE","skill_contract":"{\"tools\":{\"create_article\":{\"sideEffect\":\"WRITE\",\"success\":{\"path\":\"code\",\"op\":\"EQ\",\"value\":200}}}}"}]`,
		"agent_skill_binding.json": `[{"agent_id":1,"skill_id":2,"enabled_flag":1}]`,
		"skill_tool_binding.json":  `[{"skill_id":2,"tool_name":"query_space","enabled_flag":1},{"skill_id":2,"tool_name":"create_article","enabled_flag":1},{"skill_id":2,"tool_name":"create_website","enabled_flag":1}]`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runSkill(t, "validate", "--mcp-command", cms, dir)
	want := "WARN  rule mcp-annotations k tools.create_website: tool create_website has no contract and its server annotates it as a write (readOnlyHint false): it runs as a WRITE with approval; configure it to say how\n" +
		"1 skill(s) checked, 0 dropped, 1 warning(s)\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q, output\n%s\nwant\n%s", code, errs, out, want)
	}
	if code, _, errs := runSkill(t, "validate", "--mcp-command", cms, "--mcp-url", "http://x", dir); code != 2 || errs != "warden skill validate: --mcp-command and --mcp-url are exclusive\n" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}
