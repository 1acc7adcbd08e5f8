package testdata

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// OrdersHTTP starts the mcporders binary bin (internal/testdata/mcporders)
// serving streamable HTTP on a loopback port, and returns its URL; the
// server is stopped when the test ends.
func OrdersHTTP(t testing.TB, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "mcporders: listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return u
		}
	}
	t.Fatalf("mcporders did not report its address: %v", sc.Err())
	return ""
}
