package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The reference servers from the npm registry, pinned. CI (.ci/run)
// installs each ahead of the tests with
//
//	npm install --no-save --no-audit --no-fund \
//	  --prefix "$HOME/.cache/warden/npm/<name>@<version>" @modelcontextprotocol/<name>@<version>
//
// WARDEN_NPM_CACHE overrides $HOME/.cache/warden/npm. Outside CI a missing
// server is installed when npm is there and the test skipped when it cannot
// be had; with CI=true a missing server or node fails the test.
type npmServer struct {
	pkg, version, bin string
}

var (
	everythingServer = npmServer{"@modelcontextprotocol/server-everything", "2026.8.31", "mcp-server-everything"}
	filesystemServer = npmServer{"@modelcontextprotocol/server-filesystem", "2026.8.31", "mcp-server-filesystem"}
	memoryServer     = npmServer{"@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory"}
)

// unavailable skips the test, or fails it in CI, where the servers must be
// there.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}

// path returns the installed server's executable, installing it when npm is
// there.
func (s npmServer) path(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		unavailable(t, "node is not installed, so %s cannot run", s.pkg)
	}
	root := os.Getenv("WARDEN_NPM_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			unavailable(t, "no home directory for the npm cache: %v", err)
		}
		root = filepath.Join(home, ".cache", "warden", "npm")
	}
	prefix := filepath.Join(root, filepath.Base(s.pkg)+"@"+s.version)
	bin := filepath.Join(prefix, "node_modules", ".bin", s.bin)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable(t, "npm is not installed, so %s@%s cannot be fetched", s.pkg, s.version)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, s.pkg+"@"+s.version)
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "npm could not install %s@%s: %v\n%s", s.pkg, s.version, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("npm installed %s@%s but %s is missing", s.pkg, s.version, bin)
	}
	return bin
}
