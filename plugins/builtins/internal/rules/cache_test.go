package rules

import "testing"

// TestParseKeepsEachSkillsKey checks that two skills with the same contract
// text each get a contract naming their own skill, and that a second parse
// of the same skill comes from the cache.
func TestParseKeepsEachSkillsKey(t *testing.T) {
	t.Parallel()
	src := []byte(`{"mode":"REACT","tools":{}}`)
	a, err := Parse("skill.cache.a", src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("skill.cache.b", src)
	if err != nil {
		t.Fatal(err)
	}
	if a.SkillKey != "skill.cache.a" || b.SkillKey != "skill.cache.b" {
		t.Fatalf("skill keys %q, %q", a.SkillKey, b.SkillKey)
	}
	again, err := Parse("skill.cache.a", src)
	if err != nil || again != a {
		t.Fatalf("second parse of skill.cache.a: %p, %v; want the cached %p", again, err, a)
	}
}
