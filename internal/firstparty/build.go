package firstparty

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// modulePath is this module's path, which a source tree's go.mod must name.
const modulePath = "github.com/agentwarden/warden"

// buildFlags are the go build flags of every module, as `make plugins`
// builds them; they are part of the cache key.
var buildFlags = []string{"-buildmode=c-shared", "-trimpath", "-buildvcs=false"}

// wasmEnv is the go command's environment for a wasip1 reactor.
var wasmEnv = []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}

// build returns the modules built from the source tree, from the cache when
// an earlier process built the same sources.
func build(ctx context.Context, o Options) (*Set, error) {
	root := o.Source
	if root == "" {
		root = findSource()
	}
	goCmd, lerr := exec.LookPath("go")
	switch {
	case root == "":
		return nil, fmt.Errorf("firstparty: %w (no source tree of %s here)", ErrNoModules, modulePath)
	case !isSource(root):
		return nil, fmt.Errorf("firstparty: %w (%s is not a source tree of %s)", ErrNoModules, root, modulePath)
	case lerr != nil:
		return nil, fmt.Errorf("firstparty: %w (no go command to build them from %s)", ErrNoModules, root)
	}
	cache, err := cacheDir(o)
	if err != nil {
		return nil, err
	}
	key, err := sourceKey(ctx, goCmd, root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, key)
	if s, err := readFS(os.DirFS(dir), "."); err == nil {
		// A build in use is the most recent one as far as pruning goes.
		now := time.Now()
		_ = os.Chtimes(dir, now, now)
		s.Origin, s.Dir = Cached, dir
		return s, nil
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "warden: building the first-party plugins from %s into %s (once for these sources)\n", root, dir)
	}
	err = publish(cache, dir, func(tmp string) error { return buildAll(ctx, goCmd, root, tmp, []Plugin{Module}) })
	if err != nil {
		return nil, fmt.Errorf("firstparty: %w", err)
	}
	s, err := readFS(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("firstparty: %s: %w", dir, err)
	}
	s.Origin, s.Dir = Built, dir
	prune(cache, keepBuilds)
	return s, nil
}

// keepBuilds is how many builds from source the cache keeps: each change
// of the plugins' sources adds one (some 7 MB), and a developer changes
// them often.
const keepBuilds = 4

// prune removes all but the keep most recent builds of the cache. A process
// still using an older one has read its modules already.
func prune(cache string, keep int) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	type build struct {
		name string
		mod  int64
	}
	var builds []build
	for _, e := range entries {
		if !e.IsDir() || len(e.Name()) != 32 || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			builds = append(builds, build{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(builds, func(a, b build) int { return cmp.Compare(b.mod, a.mod) })
	for _, b := range builds[min(keep, len(builds)):] {
		_ = os.RemoveAll(filepath.Join(cache, b.name))
	}
}

// buildAll builds each of ps into dir, as many at once as there are CPUs
// (the linker is single-threaded).
func buildAll(ctx context.Context, goCmd, root, dir string, ps []Plugin) error {
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append([]string{"build"}, buildFlags...)
			args = append(args, "-o", filepath.Join(dir, p.Name+".wasm"), p.Package)
			cmd := exec.CommandContext(ctx, goCmd, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), wasmEnv...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("%w: %s: %w\n%s", ErrBuild, p.Package, err, strings.TrimSpace(stderr.String()))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sourceKey digests everything the first-party module's build reads: the
// toolchain's version and settings, the build flags, go.mod and go.sum,
// and for every package it imports, its Go and embedded files when they
// are in this tree (or a local replacement), else its module's path and
// version.
func sourceKey(ctx context.Context, goCmd, root string) (string, error) {
	h := sha256.New()
	env, err := goOutput(ctx, goCmd, root, "env", "GOVERSION", "GOFLAGS", "GOEXPERIMENT", "GOWASM", "GOWORK")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "env %q\nflags %q %q\n", env, buildFlags, wasmEnv)
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, root, f); err != nil {
			return "", err
		}
	}
	args := []string{"list", "-deps", "-f",
		"{{if not .Standard}}{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .EmbedFiles \",\"}}\t" +
			"{{with .Module}}{{.Path}}@{{.Version}}{{with .Replace}}=>{{.Path}}@{{.Version}}{{end}}{{end}}{{end}}"}
	args = append(args, Module.Package)
	out, err := goOutput(ctx, goCmd, root, args...)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			continue
		}
		imp, dir, goFiles, embeds, mod := f[0], f[1], f[2], f[3], f[4]
		fmt.Fprintf(h, "pkg %s %s\n", imp, mod)
		// A module with a version is fixed by go.sum; one without (this
		// one, or a replacement by a directory) is read file by file.
		if !strings.HasSuffix(mod, "@") {
			continue
		}
		for _, name := range append(strings.Split(goFiles, ","), strings.Split(embeds, ",")...) {
			if name == "" {
				continue
			}
			if err := hashFile(h, dir, name); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func hashFile(h interface{ Write([]byte) (int, error) }, dir, name string) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("firstparty: %w", err)
	}
	s := sha256.Sum256(b)
	fmt.Fprintf(h, "file %s %x\n", filepath.ToSlash(name), s)
	return nil
}

// goOutput runs the go command in root for wasip1 and returns its output.
func goOutput(ctx context.Context, goCmd, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), wasmEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("firstparty: go %s: %w\n%s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// findSource returns the source tree of this module: the working directory
// or the nearest directory above it whose go.mod declares it, else the tree
// this file was compiled from, if it is still there ("" when neither).
func findSource() string {
	// The tree this binary was compiled from comes first, so that running
	// it inside another checkout still builds its own plugins. A -trimpath
	// build records a module path here, not a directory.
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")); isSource(d) {
			return d
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isSource(d) {
				return d
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return ""
}

// isSource reports whether dir holds this module's go.mod and plugins.
func isSource(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if strings.TrimSpace(first) != "module "+modulePath {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "plugins", "guards"))
	return err == nil
}
