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

// Command returns the path of the Go fixture guests/<name> built as a WASI
// command (without -buildmode=c-shared), as a plugin author who builds it
// like any Go program would.
func Command(t testing.TB, name string) []byte {
	t.Helper()
	p, err := build("./internal/testdata/guests/"+name, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
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
func Build(pkg string) (string, error) { return build(pkg, true) }

func build(pkg string, reactor bool) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	key := pkg
	if !reactor {
		key += " command"
	}
	if p, ok := built[key]; ok {
		return p, nil
	}
	root := Root()
	name := filepath.Base(filepath.Dir(pkg + "/x"))
	if filepath.Base(pkg) == "cmd" || filepath.Base(pkg) == "wasm" {
		name = filepath.Base(filepath.Dir(pkg))
	}
	mode := "-buildmode=c-shared"
	if !reactor {
		name, mode = name+"-command", "-buildmode=exe"
	}
	out := filepath.Join(root, "bin", "wasm", name+".wasm")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("testdata: %w", err)
	}
	cmd := exec.Command("go", "build", mode, "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testdata: build %s: %w\n%s", pkg, err, stderr.String())
	}
	built[key] = out
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
