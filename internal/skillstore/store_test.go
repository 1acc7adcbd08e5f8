package skillstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/contract"
)

func TestLoaderStore(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	l := NewLoader(NewDirStore("../../contract/testdata/store"), slog.New(slog.NewTextHandler(&logs, nil)))
	a, err := l.Load(context.Background(), "cms-editor")
	if err != nil {
		t.Fatal(err)
	}
	if a.Profile.AgentName != "CMS editor" || a.Profile.RoutingDesc() != "Creates, tags and publishes articles on request." {
		t.Errorf("profile = %+v", a.Profile)
	}
	var keys []string
	for _, s := range a.Skills {
		keys = append(keys, s.Profile.SkillKey)
	}
	// cms.article.archive is INACTIVE, cms.space.lookup's binding is disabled,
	// cms.article.publish fails rule 6 and is dropped.
	if strings.Join(keys, ",") != "cms.article.lifecycle,cms.tag.lookup" {
		t.Errorf("skills = %v", keys)
	}
	lc := a.Skill("cms.article.lifecycle")
	if strings.Join(lc.ToolNames, ",") != "query_space,create_article" || lc.Contract.Target != "create_article" {
		t.Errorf("lifecycle = %+v", lc)
	}
	if tag := a.Skill("cms.tag.lookup"); !tag.Contract.Delegatable || tag.Profile.ShortDesc() != "Tag lookup" {
		t.Errorf("tag lookup = %+v", tag)
	}
	if len(a.Dropped) != 1 || a.Dropped[0].Profile.SkillKey != "cms.article.publish" {
		t.Fatalf("dropped = %+v", a.Dropped)
	}
	if !errors.Is(a.Dropped[0].Err, contract.ErrWriteNoSuccess) {
		t.Errorf("dropped error = %v", a.Dropped[0].Err)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="skill dropped" agent=cms-editor skill=cms.article.publish`) {
		t.Errorf("log = %s", logs.String())
	}
	if a.Skill("nope") != nil {
		t.Error("unknown skill found")
	}
}

func TestLoaderNoSkills(t *testing.T) {
	t.Parallel()
	l := NewLoader(NewDirStore("../../contract/testdata/store"), slog.New(slog.DiscardHandler))
	a, err := l.Load(context.Background(), "broken-agent")
	if !errors.Is(err, contract.ErrNoSkills) || err.Error() != `contract: load agent "broken-agent": agent has no loadable skill` {
		t.Fatalf("err = %v", err)
	}
	if a == nil || len(a.Dropped) != 1 {
		t.Errorf("agent = %+v", a)
	}
	for _, code := range []string{"retired-agent", "ghost"} {
		if _, err := l.Load(context.Background(), code); !errors.Is(err, contract.ErrAgentNotFound) {
			t.Errorf("Load(%s) = %v", code, err)
		}
	}
}

func TestLoaderCache(t *testing.T) {
	t.Parallel()
	l := NewLoader(NewDirStore("../../contract/testdata/store"), slog.New(slog.DiscardHandler))
	a1, _ := l.Load(context.Background(), "cms-editor")
	a2, _ := l.Load(context.Background(), "cms-editor")
	if a1.Skills[0].Contract != a2.Skills[0].Contract {
		t.Error("the same contract text was parsed twice")
	}
	c1, _, _ := l.Parse("a", []byte(`{}`))
	c2, _, _ := l.Parse("b", []byte(`{}`))
	if c1 == c2 || c1.SkillKey != "a" || c2.SkillKey != "b" {
		t.Error("the cache key must include the skill_key")
	}
}

func TestDirStoreReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("agent_profile.json", `[{"id":"a1","agent_code":"x","status":"ACTIVE"}]`)
	write("skill_profile.json", `[{"id":"s1","skill_key":"k","skill_contract":{"mode":"PLAN"},"status":"ACTIVE"}]`)
	write("agent_skill_binding.json", `[{"agent_id":"a1","skill_id":"s1","enabled_flag":true}]`)
	l := NewLoader(NewDirStore(dir), slog.New(slog.DiscardHandler))
	a, err := l.Load(context.Background(), "x")
	if err != nil || a.Skills[0].Contract.Mode != contract.ModePlan || a.Skills[0].ToolNames != nil {
		t.Fatalf("first load: %+v %v", a, err)
	}
	write("skill_profile.json", `[{"id":"s1","skill_key":"k","skill_contract":"{\"mode\":\"REACT\"}","status":"ACTIVE"}]`)
	a, err = l.Load(context.Background(), "x")
	if err != nil || a.Skills[0].Contract.Mode != contract.ModeReact {
		t.Fatalf("edit not picked up: %+v %v", a, err)
	}
	write("skill_profile.yaml", `[]`)
	if _, err := l.Load(context.Background(), "x"); !errors.Is(err, contract.ErrStore) {
		t.Errorf("two files for one table: %v", err)
	}
}

func TestDirStoreErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "skill_profile.yaml"), []byte("- id: 1\n  skill_contract: '{}'\n  skill_contract_file: x.json\n"), 0o644)
	_, err := NewDirStore(dir).All(context.Background())
	if !errors.Is(err, contract.ErrStore) || err.Error() != `contract: store skill_profile.yaml: skill "": skill store unreadable: both skill_contract and skill_contract_file are set` {
		t.Errorf("err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "skill_profile.yaml"), []byte("- id: [1\n"), 0o644)
	if _, err := NewDirStore(dir).All(context.Background()); !errors.Is(err, contract.ErrStore) {
		t.Errorf("bad yaml: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewDirStore(dir).All(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestDirStoreExact: a contract written inline in a YAML table keeps its key
// order and every digit of its numbers, as one written in JSON does.
func TestDirStoreExact(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, body string
	}{
		{"yaml", "skill_profile.yaml", `
- id: s1
  skill_key: k
  status: ACTIVE
  skill_contract:
    tools:
      cancel_order:
        sideEffect: WRITE
        args:
          zone: {const: "<b>A & B</b>"}
          orderId: {const: 1234567890123456789}
          total: {const: 123456789012345678901234567890}
`},
		{"json", "skill_profile.json", `[{"id":"s1","skill_key":"k","status":"ACTIVE","skill_contract":{"tools":{"cancel_order":{"sideEffect":"WRITE","args":{"zone":{"const":"<b>A & B</b>"},"orderId":{"const":1234567890123456789},"total":{"const":123456789012345678901234567890}}}}}}]`},
	}
	const want = `{"tools":{"cancel_order":{"sideEffect":"WRITE","args":{"zone":{"const":"<b>A & B</b>"},"orderId":{"const":1234567890123456789},"total":{"const":123456789012345678901234567890}}}}}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			tables, err := NewDirStore(dir).All(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Compact(&got, []byte(tables.Skills[0].SkillContract)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Errorf("contract\n got %s\nwant %s", got.String(), want)
			}
		})
	}
}
