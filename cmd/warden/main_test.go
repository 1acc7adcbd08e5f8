package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// tempRoot is a temporary directory for what tests share, removed at the
// end.
var tempRoot string

// TestMain points warden's cache at the one the tests of every package
// share (internal/testdata.CacheDir), for the commands run in-process and
// the ones started as child processes alike, unless the caller chose one.
func TestMain(m *testing.M) {
	// serve, run in-process, starts this binary as its compile worker.
	if worker, code := host.CompileWorkerMain(); worker {
		os.Exit(code)
	}
	if os.Getenv(cacheEnv) == "" {
		dir := filepath.Join(testdata.Root(), "bin", "cache")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			os.Setenv(cacheEnv, dir)
		}
	}
	// Built (if need be) before any test runs, so that no test's output
	// has the build's progress line; a failure shows in the tests.
	if root, err := cacheRoot(os.Getenv(cacheEnv)); err == nil {
		_, _ = firstPartySet(context.Background(), "", root, io.Discard)
	}
	var err error
	if tempRoot, err = os.MkdirTemp("", "warden-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(tempRoot)
	os.Exit(code)
}
