package plugintest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BuildTo builds the Go plugin main package in dir for wasip1 as a reactor
// (-buildmode=c-shared, the only shape the host runs) into the file out.
// It is what `warden plugin build` runs:
//
//	GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -buildmode=c-shared -trimpath -o OUT .
//
// The go command relinks out only when it is stale.
func BuildTo(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("plugintest: %w: go build %s: %w\n%s", ErrBuild, dir, err, log.String())
	}
	return nil
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Build builds the plugin main package in dir (relative to the working
// directory, which is the package's own in a go test: "./cmd") once per
// process into the user's cache directory, and returns the module's path.
func Build(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("plugintest: %w: %w", ErrBuild, err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[abs]; ok {
		return p, nil
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	name := filepath.Base(abs)
	if name == "cmd" || name == "wasm" {
		name = filepath.Base(filepath.Dir(abs))
	}
	sum := sha256.Sum256([]byte(abs))
	out := filepath.Join(root, "modules", name+"-"+hex.EncodeToString(sum[:6])+".wasm")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("plugintest: %w: %w", ErrBuild, err)
	}
	if err := BuildTo(context.Background(), abs, out); err != nil {
		return "", err
	}
	built[abs] = out
	return out, nil
}

// Module builds the plugin main package in dir (see Build) and returns the
// module's bytes; it fails the test when the package does not build.
func Module(t testing.TB, dir string) []byte {
	t.Helper()
	p, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CacheDir is a directory for host.Options.CacheDir shared by every test on
// the machine, so a module compiles once rather than once per test.
func CacheDir(t testing.TB) string {
	t.Helper()
	root, err := cacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "compiled")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cacheRoot is warden's directory in the user's cache directory.
func cacheRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("plugintest: %w: no cache directory: %w", ErrBuild, err)
	}
	return filepath.Join(dir, "warden", "plugintest"), nil
}
