package firstparty

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins"
)

// Plugins lists every plugins/*/*/cmd of the tree, the guards under the
// chain's position names.
func TestPluginsMatchTree(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join(testdata.Root(), "plugins", "*", "*", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, d := range dirs {
		rel, _ := filepath.Rel(testdata.Root(), d)
		want = append(want, "./"+filepath.ToSlash(rel))
	}
	for _, p := range Plugins {
		got = append(got, p.Package)
		if filepath.Base(filepath.Dir(p.Package)) != p.Name {
			t.Errorf("%s builds %s", p.Package, p.Name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Plugins builds %v, the tree has %v", got, want)
	}
	// make build copies the same modules in to embed them.
	mk, err := os.ReadFile(filepath.Join(testdata.Root(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FIRSTPARTY\s*:=(.*)$`).FindSubmatch(mk)
	if m == nil || strings.TrimSpace(string(m[1])) != Module.Name {
		t.Errorf("Makefile's FIRSTPARTY is not %s", Module.Name)
	}
	if _, err := os.Stat(filepath.Join(testdata.Root(), Module.Package, "main.go")); err != nil {
		t.Errorf("the first-party module: %v", err)
	}
	for _, p := range Plugins {
		if pl, ok := plugins.Lookup(chainName(p)); !ok || pl.Plugin.Manifest.Name != p.Selects {
			t.Errorf("%s selects %q", p.Name, p.Selects)
		}
	}
	for _, g := range append(slices.Clone(chain.FirstPartyBefore), chain.FirstPartyAfter...) {
		if !slices.ContainsFunc(Plugins, func(p Plugin) bool { return p.Package == "./plugins/guards/"+strings.ToLower(g)+"/cmd" }) {
			t.Errorf("guard %s has no plugin", g)
		}
	}
}

// chainName is the slot name of a first-party plugin.
func chainName(p Plugin) string {
	for _, pl := range plugins.All {
		if pl.File == p.Name {
			return pl.Name
		}
	}
	return ""
}

// fakeFS holds a module for each named plugin, under wasm/.
func fakeFS(names ...string) fstest.MapFS {
	fsys := fstest.MapFS{"wasm/README.md": {Data: []byte("readme")}}
	for _, n := range names {
		fsys["wasm/"+n+".wasm"] = &fstest.MapFile{Data: []byte("\x00asm " + n)}
	}
	return fsys
}

func allNames() []string {
	var n []string
	for _, p := range Plugins {
		n = append(n, p.Name)
	}
	return n
}

func TestLoadEmbedded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		origin Origin
		err    string
	}{
		{name: "every module", fsys: fakeFS(allNames()...), origin: Embedded},
		{name: "the first-party module", fsys: fakeFS(Module.Name), origin: Embedded},
		// A plugin's module of its own takes its place beside the
		// first-party module.
		{name: "the first-party module and two", fsys: fakeFS(Module.Name, "argpolicy", "env"), origin: Embedded},
		{name: "two missing", fsys: fakeFS(allNames()[:8]...),
			err: "firstparty: embedded: incomplete set of first-party modules: no node.wasm, env.wasm (nor firstparty.wasm, which serves them all)"},
		// No module at all is a binary built without them: Load then
		// builds from source, which a directory that is not a tree refuses.
		{name: "none", fsys: fakeFS(),
			err: "firstparty: this warden binary has no embedded plugins; build it with `make build`, pass --plugins DIR, or --native (/nowhere is not a source tree of github.com/agentwarden/warden)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := load(context.Background(), Options{Source: "/nowhere", CacheDir: t.TempDir()}, tt.fsys)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Origin != tt.origin || s.Dir != "" || len(s.Modules) != len(Plugins) {
				t.Fatalf("set %s %q %d modules", s.Origin, s.Dir, len(s.Modules))
			}
			shared := tt.fsys["wasm/"+Module.Name+".wasm"]
			if (shared == nil) != (s.Shared == nil) || shared != nil && !bytes.Equal(s.Shared, shared.Data) {
				t.Fatal("the set does not hold the first-party module")
			}
			for _, p := range Plugins {
				want := []byte("\x00asm " + p.Name)
				if own := tt.fsys["wasm/"+p.Name+".wasm"]; own == nil {
					want = host.SelectPlugin(shared.Data, p.Selects)
				}
				if !bytes.Equal(s.Modules[p.Name], want) {
					t.Fatalf("%s's module is %q, want %q", p.Name, s.Modules[p.Name], want)
				}
			}
		})
	}
}

func TestNoModulesIsErrNoModules(t *testing.T) {
	t.Parallel()
	_, err := load(context.Background(), Options{Source: t.TempDir()}, nil)
	if !errors.Is(err, ErrNoModules) {
		t.Fatalf("error %v, want ErrNoModules", err)
	}
}

// An embedded set is written out once, into a directory named after its
// digest, which a second set with the same modules finds: a module per
// plugin, or the first-party module and the plugins' own modules beside.
func TestWriteDir(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{allNames(), {Module.Name}, {Module.Name, "writegate"}} {
		t.Run(strings.Join(names, "+"), func(t *testing.T) {
			t.Parallel()
			cache := t.TempDir()
			o := Options{CacheDir: cache}
			s, err := load(context.Background(), o, fakeFS(names...))
			if err != nil {
				t.Fatal(err)
			}
			dir, err := s.WriteDir(o)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(cache, "embedded-"+s.Digest()[:32]); dir != want || s.Dir != want {
				t.Fatalf("dir %s, want %s", dir, want)
			}
			back, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if back.Digest() != s.Digest() || back.Origin != FromDir || !bytes.Equal(back.Shared, s.Shared) {
				t.Fatalf("read back %s %s, want %s", back.Origin, back.Digest(), s.Digest())
			}
			for _, p := range Plugins {
				if !bytes.Equal(back.Modules[p.Name], s.Modules[p.Name]) {
					t.Errorf("%s.wasm differs from the set's", p.Name)
				}
			}
			s2, _ := load(context.Background(), o, fakeFS(names...))
			if dir2, err := s2.WriteDir(o); err != nil || dir2 != dir {
				t.Fatalf("second write: %s %v", dir2, err)
			}
			entries, _ := os.ReadDir(cache)
			if len(entries) != 1 {
				t.Fatalf("cache holds %d entries, want 1", len(entries))
			}
		})
	}
}

func TestReadDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := ReadDir(dir); err == nil || err.Error() != "firstparty: "+dir+": no first-party module" {
		t.Fatalf("empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "argpolicy.wasm"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadDir(dir)
	if !errors.Is(err, ErrIncomplete) || !strings.HasSuffix(err.Error(), ": no argbinding.wasm, paramcontract.wasm, fingerprint.wasm, writegate.wasm, responsecontract.wasm, evidence.wasm, control.wasm, node.wasm, env.wasm (nor firstparty.wasm, which serves them all)") {
		t.Fatalf("one module: %v", err)
	}
}

// Two builds at once into an empty cache both get the whole set; a later
// one finds it in the cache without building, and a change to a plugin's
// source is a new cache entry.
func TestBuildCacheReused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	t.Parallel()
	cache := t.TempDir()
	o := Options{CacheDir: cache, Source: testdata.Root()}
	ctx := context.Background()
	var progress [2]bytes.Buffer
	var sets [2]*Set
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			oi := o
			oi.Progress = &progress[i]
			sets[i], errs[i] = load(ctx, oi, nil)
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if sets[i].Origin != Built && sets[i].Origin != Cached {
			t.Errorf("build %d: origin %s", i, sets[i].Origin)
		}
	}
	if sets[0].Digest() != sets[1].Digest() || sets[0].Dir != sets[1].Dir {
		t.Fatalf("two builds differ: %s %s, %s %s", sets[0].Dir, sets[0].Digest(), sets[1].Dir, sets[1].Digest())
	}
	for i, s := range sets {
		if b := s.Modules["writegate"]; !bytes.HasPrefix(b, []byte("\x00asm")) || s.Shared == nil ||
			!bytes.Equal(b, host.SelectPlugin(s.Shared, "writegate")) {
			t.Errorf("build %d: writegate's module is not the first-party module bound to writegate", i)
		}
	}
	// A build is a plugin directory as it is.
	if dir, err := sets[0].WriteDir(o); err != nil || dir != sets[0].Dir {
		t.Fatalf("WriteDir: %s %v", dir, err)
	}
	if !strings.Contains(progress[0].String()+progress[1].String(), "warden: building the first-party plugins from ") {
		t.Errorf("no progress line: %q %q", progress[0].String(), progress[1].String())
	}

	var quiet bytes.Buffer
	o.Progress = &quiet
	again, err := load(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Origin != Cached || again.Dir != sets[0].Dir || again.Digest() != sets[0].Digest() || quiet.Len() != 0 {
		t.Fatalf("third load: %s %s, progress %q", again.Origin, again.Dir, quiet.String())
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(again.Dir) {
		t.Fatalf("cache holds %v, want only %s", entries, filepath.Base(again.Dir))
	}
}

// The cache key is the same for the same tree, and names the toolchain.
func TestSourceKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := sourceKey(ctx, "go", testdata.Root())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sourceKey(ctx, "go", testdata.Root())
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) != 32 {
		t.Fatalf("keys %s, %s", a, b)
	}
	if _, err := sourceKey(ctx, "go", t.TempDir()); err == nil {
		t.Fatal("a directory without go.mod has a key")
	}
}

// The cache keeps the most recent builds from source, and nothing else of
// its own is touched: embedded sets written out, builds in progress.
func TestPrune(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	var names []string
	for i := range 6 {
		n := strings.Repeat(string(rune('a'+i)), 32)
		names = append(names, n)
		if err := os.Mkdir(filepath.Join(cache, n), 0o755); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-10) * time.Hour)
		if err := os.Chtimes(filepath.Join(cache, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"embedded-" + strings.Repeat("0", 32), ".tmp-123"} {
		if err := os.Mkdir(filepath.Join(cache, other), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prune(cache, 4)
	entries, _ := os.ReadDir(cache)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{".tmp-123", names[2], names[3], names[4], "embedded-" + strings.Repeat("0", 32), names[5]}
	if !slices.Equal(got, want) {
		t.Fatalf("cache holds %v, want %v", got, want)
	}
}
