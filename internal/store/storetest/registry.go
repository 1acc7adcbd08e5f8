package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// RunRegistry is the conformance suite of store.Registry: open returns a
// new, empty registry.
func RunRegistry(t *testing.T, open func(t *testing.T) store.Registry) {
	t.Run("plugins", func(t *testing.T) { t.Parallel(); testPlugins(t, open(t)) })
	t.Run("skills", func(t *testing.T) { t.Parallel(); testSkills(t, open(t)) })
}

func plugin(tenant, name, version, digest string) store.PluginRecord {
	return store.PluginRecord{Tenant: tenant, Name: name, Version: version, Digest: digest, Role: "guard",
		Manifest: json.RawMessage(`{"name":"` + name + `","version":"` + version + `"}`), Grant: []string{"clock"},
		Module: []byte("\x00asm" + digest), InstalledBy: "tenant", Installed: Clock.Add(time.Nanosecond)}
}

func testPlugins(t *testing.T, r store.Registry) {
	put := func(p store.PluginRecord) bool {
		t.Helper()
		added, err := r.PutPlugin(bg, p)
		must(t, err)
		return added
	}
	if !put(plugin("acme", "domainpolicy", "0.1.0", "aa")) || !put(plugin("acme", "domainpolicy", "0.2.0", "bb")) ||
		!put(plugin("acme", "alpha", "1.0.0", "cc")) || !put(plugin("globex", "domainpolicy", "0.1.0", "dd")) {
		t.Fatal("a new version was not reported as added")
	}
	if put(plugin("acme", "domainpolicy", "0.1.0", "aa")) {
		t.Fatal("the same version and digest again was reported as added")
	}
	_, err := r.PutPlugin(bg, plugin("acme", "domainpolicy", "0.1.0", "ee"))
	wantIs(t, err, store.ErrConflict, "domainpolicy@0.1.0 is installed with sha256 aa")
	bad := plugin("acme", "x", "1", "ff")
	bad.Module = nil
	_, err = r.PutPlugin(bg, bad)
	wantIs(t, err, store.ErrInvalid, "")

	list, err := r.Plugins(bg, "acme")
	must(t, err)
	var got []string
	for _, p := range list {
		got = append(got, p.Name+"@"+p.Version+"="+p.Digest)
		if p.Module != nil || p.Tenant != "acme" || p.Role != "guard" || p.InstalledBy != "tenant" ||
			!p.Installed.Equal(Clock) || !slices.Equal(p.Grant, []string{"clock"}) || !json.Valid(p.Manifest) {
			t.Fatalf("listed %+v", p)
		}
	}
	if want := []string{"alpha@1.0.0=cc", "domainpolicy@0.1.0=aa", "domainpolicy@0.2.0=bb"}; !slices.Equal(got, want) {
		t.Fatalf("plugins of acme %v, want %v", got, want)
	}
	m, err := r.PluginModule(bg, "acme", "bb")
	must(t, err)
	if string(m) != "\x00asmbb" {
		t.Fatalf("module %q", m)
	}
	_, err = r.PluginModule(bg, "acme", "dd") // globex's
	wantIs(t, err, store.ErrNotFound, "")

	must(t, r.DeletePlugin(bg, "acme", "domainpolicy"))
	wantIs(t, r.DeletePlugin(bg, "acme", "domainpolicy"), store.ErrNotFound, "")
	list, err = r.Plugins(bg, "acme")
	must(t, err)
	if len(list) != 1 || list[0].Name != "alpha" {
		t.Fatalf("after delete: %+v", list)
	}
	if list, err = r.Plugins(bg, "globex"); err != nil || len(list) != 1 {
		t.Fatalf("globex after acme's delete: %+v %v", list, err)
	}
	// Deleted, a version may be installed again with another module.
	if !put(plugin("acme", "domainpolicy", "0.1.0", "ee")) {
		t.Fatal("a reinstall after delete was not added")
	}
	if list, err = r.Plugins(bg, "nobody"); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("plugins of an unknown tenant: %#v %v", list, err)
	}
}

func testSkills(t *testing.T, r store.Registry) {
	put := func(tenant, key, doc string) bool {
		t.Helper()
		added, err := r.PutSkill(bg, store.SkillRecord{Tenant: tenant, Key: key, Doc: json.RawMessage(doc), UpdatedBy: "tenant", Updated: Clock})
		must(t, err)
		return added
	}
	if !put("acme", "web.site", `{"skill_name":"Site","n":1.50}`) || !put("acme", "cms.article", `{}`) || !put("globex", "web.site", `{}`) {
		t.Fatal("a new skill was not reported as added")
	}
	if put("acme", "web.site", `{"skill_name":"Site 2","n":1.50}`) {
		t.Fatal("a replaced skill was reported as added")
	}
	_, err := r.PutSkill(bg, store.SkillRecord{Tenant: "acme", Key: "x", Doc: json.RawMessage(`{`)})
	wantIs(t, err, store.ErrInvalid, "")
	list, err := r.Skills(bg, "acme")
	must(t, err)
	if len(list) != 2 || list[0].Key != "cms.article" || list[1].Key != "web.site" ||
		string(list[1].Doc) != `{"skill_name":"Site 2","n":1.50}` || !list[1].Updated.Equal(Clock) || list[1].UpdatedBy != "tenant" {
		t.Fatalf("skills of acme: %+v", list)
	}
	must(t, r.DeleteSkill(bg, "acme", "web.site"))
	wantIs(t, r.DeleteSkill(bg, "acme", "web.site"), store.ErrNotFound, "")
	if list, err = r.Skills(bg, "globex"); err != nil || len(list) != 1 {
		t.Fatalf("globex after acme's delete: %+v %v", list, err)
	}
	if list, err = r.Skills(bg, "nobody"); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("skills of an unknown tenant: %#v %v", list, err)
	}
}
