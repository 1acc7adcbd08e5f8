package firstparty

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/plugins"
)

// Plugin is one first-party plugin: the name of its module file (without
// .wasm, as `make plugins` names it), the main package that builds it as a
// module of its own, and its manifest's name, by which the first-party
// module serves it (Selects).
type Plugin struct {
	Name    string
	Package string
	Selects string
}

// Plugins are the first-party plugins (package plugins' list): the guards
// in chain order, then the builtins.
var Plugins = func() []Plugin {
	var out []Plugin
	for _, p := range plugins.All {
		out = append(out, Plugin{p.File, "./" + p.Main, p.Plugin.Manifest.Name})
	}
	return out
}()

// Module is the first-party module: one module serving every plugin of
// Plugins (guest.ServeAll), which each first-party slot loads bound to its
// plugin (host.SelectPlugin). A module of one plugin (Plugin.Package) can
// still take a slot's place.
var Module = Plugin{Name: "firstparty", Package: "./plugins/firstparty/cmd"}

// Origin says where a Set came from.
type Origin string

// Origins of a Set.
const (
	// Embedded modules were built into the binary by `make build`.
	Embedded Origin = "embedded"
	// Built modules were built from source by this process.
	Built Origin = "built"
	// Cached modules were built from the same sources by an earlier
	// process, and found in the cache.
	Cached Origin = "cached"
	// FromDir modules were read from a directory the user named.
	FromDir Origin = "dir"
)

// Set is the first-party modules.
type Set struct {
	// Modules holds each plugin's module by its Plugin.Name: the
	// first-party module bound to the plugin (host.SelectPlugin), or a
	// module of the plugin's own (<name>.wasm in a directory, ReadDir).
	Modules map[string][]byte
	// Shared is the first-party module itself (Module) when some of
	// Modules are bound from it, else nil.
	Shared []byte
	Origin Origin
	// Dir holds the modules as readFS reads them; it is empty for an
	// embedded set until WriteDir writes it out.
	Dir string
}

// String says where the set came from, for a log line.
func (s *Set) String() string {
	switch s.Origin {
	case Embedded:
		return "embedded in the binary"
	case Built:
		return "built from source into " + s.Dir
	case Cached:
		return "built from source earlier, from " + s.Dir
	}
	return "from " + s.Dir
}

// Digest identifies the set's contents: the sha256 of every module's name
// and digest, in Plugins order.
func (s *Set) Digest() string {
	h := sha256.New()
	for _, p := range Plugins {
		d := sha256.Sum256(s.Modules[p.Name])
		fmt.Fprintf(h, "%s %x\n", p.Name, d)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Options say where Load looks.
type Options struct {
	// CacheDir is where modules built from source are kept, one
	// directory per digest of their sources; embedded modules written out
	// by WriteDir go there too. Empty means DefaultCacheDir()/plugins.
	CacheDir string
	// Source is this module's source tree; empty finds it: the working
	// directory or one above it, else the tree this package was compiled
	// from, if it is still there.
	Source string
	// Progress, if set, is told when a build starts (it takes a while).
	Progress io.Writer
}

// DefaultCacheDir is warden's directory under the user's cache directory.
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("firstparty: %w", err)
	}
	return filepath.Join(d, "warden"), nil
}

// loaded memoises Load per process: a set does not change while a process
// runs, and tests load it from many goroutines.
var loaded struct {
	sync.Mutex
	sets map[Options]*Set
}

// Load returns the first-party modules: the embedded ones, or else the
// ones built from the source tree into the cache (built now if they are
// not there). It is safe for concurrent use, across processes too.
func Load(ctx context.Context, o Options) (*Set, error) {
	loaded.Lock()
	defer loaded.Unlock()
	key := o
	key.Progress = nil
	if s, ok := loaded.sets[key]; ok {
		return s, nil
	}
	s, err := load(ctx, o, embedded())
	if err != nil {
		return nil, err
	}
	if loaded.sets == nil {
		loaded.sets = map[Options]*Set{}
	}
	loaded.sets[key] = s
	return s, nil
}

// load is Load with the embedded files given.
func load(ctx context.Context, o Options, emb fs.FS) (*Set, error) {
	if emb != nil {
		s, err := readFS(emb, "wasm")
		switch {
		case err == nil:
			s.Origin = Embedded
			return s, nil
		case !errors.Is(err, errNone):
			return nil, fmt.Errorf("firstparty: embedded: %w", err)
		}
	}
	return build(ctx, o)
}

// errNone: a directory holds no first-party module at all.
var errNone = errors.New("no first-party module")

// ReadDir reads the first-party modules from dir (<name>.wasm each).
func ReadDir(dir string) (*Set, error) {
	s, err := readFS(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("firstparty: %s: %w", dir, err)
	}
	s.Origin, s.Dir = FromDir, dir
	return s, nil
}

// readFS reads the first-party modules under dir of fsys: each plugin's
// module of its own (<name>.wasm) where there is one, else the first-party
// module (firstparty.wasm) bound to the plugin. A directory with neither
// is errNone; one where some plugin has neither, ErrIncomplete naming
// them.
func readFS(fsys fs.FS, dir string) (*Set, error) {
	shared, err := fs.ReadFile(fsys, path.Join(dir, Module.Name+".wasm"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		shared = nil
	case err != nil:
		return nil, err
	}
	s := &Set{Modules: map[string][]byte{}}
	var missing []string
	for _, p := range Plugins {
		b, err := fs.ReadFile(fsys, path.Join(dir, p.Name+".wasm"))
		switch {
		case errors.Is(err, fs.ErrNotExist) && shared != nil:
			s.Modules[p.Name] = host.SelectPlugin(shared, p.Selects)
			s.Shared = shared
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, p.Name+".wasm")
		case err != nil:
			return nil, err
		default:
			s.Modules[p.Name] = b
		}
	}
	switch {
	case len(missing) == len(Plugins):
		return nil, errNone
	case len(missing) > 0:
		return nil, fmt.Errorf("%w: no %s (nor %s.wasm, which serves them all)", ErrIncomplete, strings.Join(missing, ", "), Module.Name)
	}
	return s, nil
}

// WriteDir makes sure the set is in a directory (Dir), for a reader that
// takes one (warden serve's plugin directory): an embedded set is written
// out once under the cache, in a directory named after its digest, as
// readFS reads it (firstparty.wasm, and a module of its own for each
// plugin not bound from it).
func (s *Set) WriteDir(o Options) (string, error) {
	if s.Dir != "" {
		return s.Dir, nil
	}
	cache, err := cacheDir(o)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "embedded-"+s.Digest()[:32])
	if _, err := readFS(os.DirFS(dir), "."); err == nil {
		s.Dir = dir
		return dir, nil
	}
	err = publish(cache, dir, func(tmp string) error {
		if s.Shared != nil {
			if err := os.WriteFile(filepath.Join(tmp, Module.Name+".wasm"), s.Shared, 0o644); err != nil {
				return err
			}
		}
		for _, p := range Plugins {
			if s.Shared != nil && bytes.Equal(s.Modules[p.Name], host.SelectPlugin(s.Shared, p.Selects)) {
				continue
			}
			if err := os.WriteFile(filepath.Join(tmp, p.Name+".wasm"), s.Modules[p.Name], 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("firstparty: write %s: %w", dir, err)
	}
	s.Dir = dir
	return dir, nil
}

func cacheDir(o Options) (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	d, err := DefaultCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "plugins"), nil
}

// publish fills a fresh directory beside dir with fill, then renames it to
// dir, so that a reader sees a whole set or none. When another process got
// there first, its directory stays and this one is removed.
func publish(parent, dir string, fill func(tmp string) error) error {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fill(tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return nil // another process published it first
		}
		return err
	}
	return nil
}
