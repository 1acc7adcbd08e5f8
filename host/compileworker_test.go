package host_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestMain lets this test binary serve as a host's compile worker.
func TestMain(m *testing.M) {
	if worker, code := host.CompileWorkerMain(); worker {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// selfWorker is this test binary as a compile worker.
func selfWorker(t *testing.T) *host.CompileWorker {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// -test.run=^$: were TestMain not to serve as the worker, the binary
	// would run no test and answer out of protocol.
	return &host.CompileWorker{Path: exe, Args: []string{"-test.run=^$"}}
}

// TestCompileWorker compiles a module the host has never seen in the
// worker, then loads it from the cache directory: the same host and a
// new one on the same directory run no second compile.
func TestCompileWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	mod := testdata.Bytes(t, "good")
	newHost := func() *host.Host {
		h, err := host.New(host.Options{CacheDir: dir, CompileWorker: selfWorker(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close(ctx) })
		return h
	}
	h := newHost()
	for i := range 2 {
		p, err := h.Load(ctx, host.Source{Name: "good", Bytes: mod}, host.Policy{})
		if err != nil {
			t.Fatalf("load %d: %v", i+1, err)
		}
		if v := p.Guard(ctx, "t", before(`{"x":1}`)); !v.Pass && v.Observation == nil {
			t.Fatalf("load %d: no verdict", i+1)
		}
		_ = p.Close(ctx)
	}
	if st := h.CompileStats(); st.Worker != 1 || st.WorkerFailed != 0 || st.WorkerRefused != 0 || st.Fallback != 0 || st.WorkerTime <= 0 {
		t.Fatalf("stats after two loads: %+v, want one worker compile", st)
	}
	h2 := newHost()
	if err := h2.Precompile(ctx, host.Source{Name: "good", Bytes: mod}, host.Policy{}); err != nil {
		t.Fatal(err)
	}
	if st := h2.CompileStats(); st != (host.CompileStats{}) {
		t.Fatalf("a new host on the same cache: %+v, want no worker compile", st)
	}
}

// TestCompileWorkerFailures: a worker that ran and failed refuses the
// module with ErrCompileWorker and its reason; one that cannot be started
// falls back to compiling in the serving process, counted; a module that
// does not compile is refused as it would be without a worker.
func TestCompileWorkerFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := testdata.Bytes(t, "good")
	// A new digest per case, so that each has to be compiled.
	variant := func(tag string) []byte {
		return append(append([]byte(nil), good...), customSection("warden.test", tag)...)
	}
	tests := []struct {
		name     string
		worker   host.CompileWorker
		module   []byte
		sentinel error
		message  string
		stats    host.CompileStats
	}{
		{"crashes", host.CompileWorker{Path: "/bin/sh", Args: []string{"-c", "echo boom >&2; exit 3"}}, variant("crash"),
			host.ErrCompileWorker, "host: compile m: compile worker failed: exit status 3: boom", host.CompileStats{Worker: 1, WorkerFailed: 1}},
		{"answers out of protocol", host.CompileWorker{Path: "/bin/sh", Args: []string{"-c", "cat >/dev/null; echo hello"}}, variant("garbage"),
			host.ErrCompileWorker, `host: compile m: compile worker failed: answer out of protocol: "hello"`, host.CompileStats{Worker: 1, WorkerFailed: 1}},
		{"runs past its timeout", host.CompileWorker{Path: "/bin/sh", Args: []string{"-c", "exec sleep 30"}, Timeout: 200 * time.Millisecond}, variant("slow"),
			host.ErrCompileWorker, "host: compile m: compile worker failed: no answer within 200ms", host.CompileStats{Worker: 1, WorkerFailed: 1}},
		{"cannot be started", host.CompileWorker{Path: "/nonexistent/warden"}, variant("fallback"), nil, "", host.CompileStats{Fallback: 1}},
		{"refuses a module that does not compile", *selfWorker(t), append(append([]byte(nil), good...), 0x0b, 0x01, 0x00), // a data section of 0 bytes too short
			host.ErrCompile, "host: compile m: module does not compile:", host.CompileStats{Worker: 1, WorkerRefused: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := host.New(host.Options{CacheDir: t.TempDir(), CompileWorker: &tc.worker})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(ctx)
			err = h.Precompile(ctx, host.Source{Name: "m", Bytes: tc.module}, host.Policy{})
			switch {
			case tc.sentinel == nil && err != nil:
				t.Fatalf("precompile: %v", err)
			case tc.sentinel != nil && (!errors.Is(err, tc.sentinel) || !strings.HasPrefix(err.Error(), tc.message)):
				t.Fatalf("precompile: %v\nwant %v, starting %q", err, tc.sentinel, tc.message)
			}
			st := h.CompileStats()
			st.WorkerTime = 0
			if st != tc.stats {
				t.Fatalf("stats %+v, want %+v", st, tc.stats)
			}
		})
	}
}

// TestCompileWorkerNeedsCache: a worker without a cache directory to
// compile into is refused, not ignored.
func TestCompileWorkerNeedsCache(t *testing.T) {
	t.Parallel()
	_, err := host.New(host.Options{CompileWorker: &host.CompileWorker{Path: "/bin/true"}})
	if err == nil || !strings.Contains(err.Error(), "needs a cache directory") {
		t.Fatalf("New: %v", err)
	}
}

// customSection is a wasm custom section: the same code under another
// digest.
func customSection(name, payload string) []byte {
	body := append([]byte{byte(len(name))}, name...)
	body = append(body, payload...)
	return append([]byte{0, byte(len(body))}, body...)
}
