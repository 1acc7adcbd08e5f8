package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/skillstore"
)

func TestHintsWrite(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		name string
		a    *Annotations
		want bool
	}{
		{"no annotations", nil, false},
		{"no hints", &Annotations{}, false},
		{"read-only", &Annotations{ReadOnlyHint: &yes}, false},
		{"not read-only", &Annotations{ReadOnlyHint: &no}, true},
		{"additive write", &Annotations{ReadOnlyHint: &no, DestructiveHint: &no}, true},
		{"destructive alone", &Annotations{DestructiveHint: &yes}, true},
		{"not destructive alone", &Annotations{DestructiveHint: &no}, false},
		{"read-only wins over destructive", &Annotations{ReadOnlyHint: &yes, DestructiveHint: &yes}, false},
		{"idempotent says nothing", &Annotations{IdempotentHint: &yes, OpenWorldHint: &yes}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := (Tool{Name: "x", Annotations: tc.a}).HintsWrite(); got != tc.want {
				t.Fatalf("HintsWrite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestApplyHints(t *testing.T) {
	t.Parallel()
	no := false
	listed := []Tool{
		{Name: "read_it"},
		{Name: "delete_it", Annotations: &Annotations{ReadOnlyHint: &no}},
		{Name: "create_it", Annotations: &Annotations{ReadOnlyHint: &no}},
		{Name: "unbound_write", Annotations: &Annotations{ReadOnlyHint: &no}},
	}
	// create_it has a contract: it stays as the contract says (a read with
	// a label), whatever its server hints.
	src := `{
  // comments are allowed in a contract
  "mode": "REACT",
  "tools": {"create_it": {"label": "Create"}}
}`
	parsed, _, err := contract.Parse("k", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: "k", SkillContract: src}, Contract: parsed,
		ToolNames: []string{"read_it", "delete_it", "create_it"}}
	out, changed, err := ApplyHints(sk, listed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"delete_it"}) {
		t.Fatalf("changed %v", changed)
	}
	if d := out.Contract.Tool("delete_it"); !d.IsWrite() || !d.NeedsConfirm() || d.Success == nil || !d.Judge([]byte(`{"ok":1}`)).OK {
		t.Fatalf("delete_it: %+v", d)
	}
	if c := out.Contract.Tool("create_it"); c.IsWrite() || c.Label != "Create" {
		t.Fatalf("create_it: %+v", c)
	}
	if out.Contract.Tool("read_it") != nil || out.Contract.Tool("unbound_write") != nil || out.Contract.Mode != contract.ModeReact {
		t.Fatalf("contract %+v", out.Contract)
	}
	// The source the guards and the node see says the same.
	var doc struct {
		Mode  string                     `json:"mode"`
		Tools map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out.Profile.SkillContract), &doc); err != nil {
		t.Fatal(err)
	}
	if string(doc.Tools["delete_it"]) != `{"sideEffect":"WRITE","confirm":true,"success":{}}` || string(doc.Tools["create_it"]) != `{"label":"Create"}` || doc.Mode != "REACT" {
		t.Fatalf("source %s", out.Profile.SkillContract)
	}
	// The skill given is not changed.
	if sk.Contract.Tool("delete_it") != nil || sk.Profile.SkillContract != src {
		t.Fatal("ApplyHints changed its input")
	}
	// Nothing to change: the same skill back.
	if same, changed, err := ApplyHints(sk, listed[:1]); err != nil || same != sk || changed != nil {
		t.Fatalf("no hints: %p %v %v", same, changed, err)
	}
	// An empty contract gets its tools.
	empty := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: "e"}, ToolNames: []string{"delete_it"}}
	if out, _, err := ApplyHints(empty, listed); err != nil || !out.Contract.Tool("delete_it").IsWrite() {
		t.Fatalf("empty contract: %v", err)
	}
}

// TestApplyHintsDelegatable: a delegatable skill cannot bind a write, so a
// tool hinted into one makes the skill fail to load rather than run a
// destructive tool without approval.
func TestApplyHintsDelegatable(t *testing.T) {
	t.Parallel()
	no := false
	src := `{"delegatable": true}`
	parsed, _, err := contract.Parse("d", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: "d", SkillContract: src}, Contract: parsed, ToolNames: []string{"rm"}}
	_, _, err = ApplyHints(sk, []Tool{{Name: "rm", Annotations: &Annotations{ReadOnlyHint: &no}}})
	if !errors.Is(err, contract.ErrDelegatableWrite) {
		t.Fatalf("err = %v", err)
	}
}
