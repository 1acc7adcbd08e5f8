package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/firstparty"
	"github.com/agentwarden/warden/plugins"
)

// cacheEnv names warden's cache directory: the first-party plugins built
// from source (plugins/) and the compiled code of every module (compiled/).
// Unset, it is warden/ under the user's cache directory.
const cacheEnv = "WARDEN_CACHE_DIR"

// cacheRoot returns the cache directory: dir if given, else the user
// cache's warden/.
func cacheRoot(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return firstparty.DefaultCacheDir()
}

// compiledDir is where the host keeps compiled code under the cache.
func compiledDir(root string) string { return filepath.Join(root, "compiled") }

// firstPartySet returns the first-party wasm modules: those of dir when
// given (--plugins DIR), else the embedded ones, else the ones built from
// the source tree into the cache (progress says so: it takes a while).
func firstPartySet(ctx context.Context, dir, root string, progress io.Writer) (*firstparty.Set, error) {
	if dir != "" {
		return firstparty.ReadDir(dir)
	}
	return firstparty.Load(ctx, firstparty.Options{CacheDir: filepath.Join(root, "plugins"), Progress: progress})
}

// logPlugins names each first-party slot's generation and digest once at
// start, in the order sessions run them, or says they run native.
func logPlugins(log *slog.Logger, slots map[string]*host.Slot, native bool) {
	if native {
		log.Info("first-party plugins run native")
		return
	}
	for _, p := range plugins.All {
		n := p.Name
		sl, ok := slots[n]
		if !ok {
			continue
		}
		g := sl.Current()
		attrs := []any{"slot", n, "generation", g.Number, "digest", "sha256:" + g.Digest, "ref", g.Ref, "runtime", "wasm"}
		if p := sl.Plugin(); p.Selected() != "" {
			// The digest names the first-party module bound to the
			// plugin; this is the module's own.
			attrs = append(attrs, "module", "sha256:"+p.ModuleDigest())
		}
		log.Info("plugin", attrs...)
	}
}
