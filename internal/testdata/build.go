package testdata

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Root returns the module's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Wasm returns the path of the Go fixture guests/<name>, built (once per
// process, and only relinked when the go command finds it stale).
func Wasm(t testing.TB, name string) string {
	t.Helper()
	p, err := Build("./internal/testdata/guests/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Bytes returns the contents of Wasm(t, name).
func Bytes(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(Wasm(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WAT returns the committed module wat/<name>.wasm.
func WAT(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(), "internal", "testdata", "wat", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Build builds the main package pkg (a path relative to the module root,
// like "./plugins/guards/argpolicy/cmd") for wasip1 as a reactor into
// bin/wasm/, and returns the module's path.
func Build(pkg string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg]; ok {
		return p, nil
	}
	root := Root()
	out := filepath.Join(root, "bin", "wasm", filepath.Base(filepath.Dir(pkg+"/x"))+".wasm")
	if filepath.Base(pkg) == "cmd" || filepath.Base(pkg) == "wasm" {
		out = filepath.Join(root, "bin", "wasm", filepath.Base(filepath.Dir(pkg))+".wasm")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("testdata: %w", err)
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testdata: build %s: %w\n%s", pkg, err, stderr.String())
	}
	built[pkg] = out
	return out, nil
}

// CacheDir is a compilation cache shared by the tests of every package, so
// a fixture compiles once per machine rather than once per test.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(), "bin", "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
