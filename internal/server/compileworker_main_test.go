package server_test

import (
	"os"
	"testing"

	"github.com/agentwarden/warden/host"
)

// TestMain lets this test binary serve as a host's compile worker
// (TestColdSwapUnderHTTPLoad).
func TestMain(m *testing.M) {
	if worker, code := host.CompileWorkerMain(); worker {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
