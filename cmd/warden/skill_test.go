package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
)

func runSkill(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdSkill(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSkillValidateAgrees runs the CLI on every contract fixture and checks
// that it reports exactly what contract.Parse reports, with the right exit code.
func TestSkillValidateAgrees(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../contract/testdata/*/*.json*")
	if len(files) < 40 {
		t.Fatalf("only %d fixtures found", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			key := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
			c, warns, perr := contract.Parse(key, src)
			// Without modules (--plugin, --plugins-dir) no tenant guard
			// resolves: a valid contract that attaches one is dropped.
			unresolved := perr == nil && len(c.Guards) > 0
			if unresolved {
				perr = &contract.ValidationError{SkillKey: key, Problems: (&guardModules{reg: &chain.Registry{}}).check(context.Background(), key, c.Guards)}
			}
			var want []string
			for _, p := range contract.Problems(perr) {
				want = append(want, fmt.Sprintf("error %s %s %s: %s", p.Rule, p.SkillKey, p.Path, p.Message()))
			}
			for _, w := range warns {
				want = append(want, fmt.Sprintf("warning %s %s %s: %s", w.Rule, w.SkillKey, w.Path, w.Message))
			}
			code, out, stderr := runSkill(t, "validate", "--json", f)
			wantCode := 0
			if perr != nil {
				wantCode = 1
			}
			if code != wantCode || stderr != "" {
				t.Fatalf("exit %d (stderr %q), want %d", code, stderr, wantCode)
			}
			if (strings.HasPrefix(filepath.Base(filepath.Dir(f)), "invalid") || unresolved) != (code == 1) {
				t.Errorf("an invalid fixture must exit 1, a valid one 0; got %d", code)
			}
			var rep validateReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("--json output: %v\n%s", err, out)
			}
			var got []string
			for _, s := range rep.Skills {
				for _, p := range s.Problems {
					got = append(got, fmt.Sprintf("%s %s %s %s: %s", p.Severity, p.Rule, p.SkillKey, p.Path, p.Message))
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("CLI reports\n%s\ncontract.Parse reports\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The text form lists the same problems.
			_, text, _ := runSkill(t, "validate", f)
			for _, p := range contract.Problems(perr) {
				if !strings.Contains(text, p.Message()) || !strings.Contains(text, "rule "+string(p.Rule)) {
					t.Errorf("text output misses %v:\n%s", p, text)
				}
			}
		})
	}
}

func TestSkillValidateText(t *testing.T) {
	t.Parallel()
	code, out, _ := runSkill(t, "validate", "../../contract/testdata/invalid/rule06_write_no_success.json")
	want := "ERROR rule 6   rule06_write_no_success tools.create_article.success: WRITE tool without success: a WRITE tool must configure success\n" +
		"1 skill(s) checked, 1 dropped, 0 warning(s)\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runSkill(t, "validate", "../../contract/testdata/valid/warn_platform_leaf.json")
	if code != 0 || !strings.HasPrefix(out, "WARN  rule P2  warn_platform_leaf outputs.name: output key \"name\" is a reserved platform field name\n") ||
		!strings.HasSuffix(out, "1 skill(s) checked, 0 dropped, 5 warning(s)\n") {
		t.Errorf("exit %d, output\n%s", code, out)
	}
	code, out, _ = runSkill(t, "validate", "../../contract/testdata/invalid/rule01_empty.json")
	if code != 1 || !strings.Contains(out, "ERROR rule 1   rule01_empty (contract): skill_contract is empty or not valid JSON: skill_contract is empty\n") {
		t.Errorf("exit %d, output\n%s", code, out)
	}
}

func TestSkillValidateStore(t *testing.T) {
	t.Parallel()
	code, out, _ := runSkill(t, "validate", "../../contract/testdata/store")
	want := "ERROR rule 6   cms.article.publish tools.publish_article.success: WRITE tool without success: a WRITE tool must configure success\n" +
		"ERROR agent broken-agent has no loadable skill: planning would fail\n" +
		"4 skill(s) checked, 1 dropped, 0 warning(s)\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runSkill(t, "validate", "--json", "../../contract/testdata/store")
	var rep validateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d: %v", code, err)
	}
	if rep.Checked != 4 || rep.Dropped != 1 || len(rep.AgentsWithoutSkills) != 1 || rep.Skills[2].SkillKey != "cms.article.publish" || rep.Skills[2].Loaded {
		t.Errorf("report = %+v", rep)
	}
	// A clean store exits 0.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agent_profile.json"), []byte(`[{"id":1,"agent_code":"a","status":"ACTIVE"}]`), 0o644)
	os.WriteFile(filepath.Join(dir, "skill_profile.json"), []byte(`[{"id":2,"skill_key":"k","skill_contract":"{}","status":"ACTIVE"}]`), 0o644)
	os.WriteFile(filepath.Join(dir, "agent_skill_binding.json"), []byte(`[{"agent_id":1,"skill_id":2,"enabled_flag":1}]`), 0o644)
	if code, out, _ := runSkill(t, "validate", dir); code != 0 || out != "1 skill(s) checked, 0 dropped, 0 warning(s)\n" {
		t.Errorf("clean store: exit %d\n%s", code, out)
	}
}

func TestSkillUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no subcommand", nil, 2},
		{"unknown subcommand", []string{"check", "x"}, 2},
		{"no path", []string{"validate"}, 2},
		{"two paths", []string{"validate", "a", "b"}, 2},
		{"unknown flag", []string{"validate", "--yaml", "x"}, 2},
		{"missing file", []string{"validate", "/nonexistent/skill.json"}, 2},
		{"help", []string{"help"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if code, _, _ := runSkill(t, tt.args...); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
		})
	}
	if _, _, stderr := runSkill(t, "validate", "/nonexistent/skill.json"); stderr != "warden skill validate: stat /nonexistent/skill.json: no such file or directory\n" {
		t.Errorf("stderr = %q", stderr)
	}
}

// TestSkillValidateGuardRefs checks that a skill's tenant guards must
// resolve against the modules named with --plugin or --plugins-dir: refs,
// phases and configs.
func TestSkillValidateGuardRefs(t *testing.T) {
	t.Parallel()
	wasm, err := testdata.Build("./examples/guards/domainguard/cmd")
	if err != nil {
		t.Fatal(err)
	}
	modDir := t.TempDir()
	b, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modDir, "domainguard.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, guards string) string {
		p := filepath.Join(dir, name+".json")
		src := `{"tools": {"create_website": {"sideEffect": "WRITE", "success": {"path": "code", "op": "EQ", "value": 200}}}, "guards": [` + guards + `]}`
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const good = `{"ref": "domainguard@0.1.0", "phase": "before", "position": "after:ParamContract", "config": {"tool": "create_website", "allowed": ["example.com"]}}`
	okFile := write("cms.website", good)
	tests := []struct {
		name string
		args []string
		code int
		out  string // contained in stdout, or stderr for code 2
	}{
		{"no modules", []string{okFile}, 1,
			"ERROR rule W1  cms.website guards[0].ref: invalid guard ref: domainguard@0.1.0 is not installed; name its module with --plugin [REF=]FILE or --plugins-dir DIR\n1 skill(s) checked, 1 dropped"},
		{"--plugin", []string{"--plugin", wasm, okFile}, 0, "1 skill(s) checked, 0 dropped, 0 warning(s)\n"},
		{"--plugin with its ref", []string{"--plugin", "domainguard@0.1.0=" + wasm, okFile}, 0, "0 dropped"},
		{"--plugins-dir", []string{"--plugins-dir", modDir, okFile}, 0, "0 dropped"},
		{"another version", []string{"--plugins-dir", modDir, write("v2", strings.Replace(good, "0.1.0", "0.2.0", 1))}, 1,
			"ERROR rule W1  v2 guards[0].ref: invalid guard ref: domainguard@0.2.0 is not installed\n"},
		{"the wrong phase", []string{"--plugins-dir", modDir, write("after", strings.Replace(strings.Replace(good, `"before"`, `"after"`, 1), "after:ParamContract", "last", 1))}, 1,
			"ERROR rule W1  after guards[0].ref: invalid guard ref: domainguard@0.1.0 (domainguard@0.1.0) runs in phases [before], not after\n"},
		{"a config the schema refuses", []string{"--plugins-dir", modDir, write("badconfig", `{"ref": "domainguard@0.1.0", "phase": "before", "config": {"tool": "create_website"}}`)}, 1,
			"ERROR rule W5  badconfig guards[0].config: guard config is not an object: domainguard@0.1.0's configSchema refuses it: allowed: required property is missing\n"},
		{"a ref given to another module", []string{"--plugin", "spendlimit@1.0.0=" + wasm, okFile}, 2,
			"warden skill validate: --plugin spendlimit@1.0.0=" + wasm + ": the module is domainguard@0.1.0 (sha256:"},
		{"an empty --plugins-dir", []string{"--plugins-dir", t.TempDir(), okFile}, 2, "no *.wasm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runSkill(t, append([]string{"validate"}, tt.args...)...)
			got := out
			if tt.code == 2 {
				got = stderr
			}
			if code != tt.code || !strings.Contains(got, tt.out) {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s\nwant %q", code, tt.code, out, stderr, tt.out)
			}
		})
	}
}
