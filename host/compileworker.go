package host

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
)

// Compiling a module the host has never seen takes seconds of CPU (13–18 s
// for a Go guest on a 2-core machine) and allocates hundreds of MB; done in
// the serving process, its CPU and the GC work its garbage sets off slow
// every call in flight. A CompileWorker moves that compile into a separate
// process at the lowest CPU priority: it rewrites and compiles the module
// into the host's cache directory (the rewrite and wazero's compiled code),
// and the serving process then loads the compiled code from there, which
// costs it a decode and a validation of the module (about 0.1 s) instead of
// the compile.

// CompileWorkerEnv is set in a compile worker's environment. A program that
// is a CompileWorker's Path calls CompileWorkerMain first thing in main
// (cmd/warden does; a test binary does in TestMain).
const CompileWorkerEnv = "WARDEN_COMPILE_WORKER"

// CompileWorker says how a Host compiles a module it has never compiled:
// in a child process running Path with Args, CompileWorkerEnv set,
// GOMAXPROCS=1 and the lowest CPU priority. One compile runs at a time per
// host. A worker that ran and failed (crashed, ran past Timeout, answered
// out of protocol) fails the load with ErrCompileWorker; one that cannot
// be started is logged as an error and the module is compiled in the
// serving process, as without a worker.
type CompileWorker struct {
	// Path is the executable, Args its arguments after the name.
	Path string
	Args []string
	// Timeout bounds one compile; 0 means 10 minutes.
	Timeout time.Duration
}

// CompileStats count how the host compiled the modules it had never
// compiled.
type CompileStats struct {
	// Worker compiles ran in the compile worker, WorkerTime in total;
	// WorkerFailed of them failed the load (ErrCompileWorker), and
	// WorkerRefused refused a module that does not compile.
	Worker, WorkerFailed, WorkerRefused uint64
	WorkerTime                          time.Duration
	// Fallback compiles ran in the serving process because the worker
	// could not be started.
	Fallback uint64
}

// workerState is a host's compile worker: one compile at a time.
type workerState struct {
	cfg                             CompileWorker
	sem                             chan struct{}
	runs, failed, refused, fallback atomic.Uint64
	nanos                           atomic.Int64
}

// CompileStats reports how the host compiled the modules it had never
// compiled; zero without a CompileWorker.
func (h *Host) CompileStats() CompileStats {
	w := h.worker
	if w == nil {
		return CompileStats{}
	}
	return CompileStats{Worker: w.runs.Load(), WorkerFailed: w.failed.Load(), WorkerRefused: w.refused.Load(),
		WorkerTime: time.Duration(w.nanos.Load()), Fallback: w.fallback.Load()}
}

// workerRequest is the first line a worker reads; Size bytes of module
// follow it.
type workerRequest struct {
	Name           string `json:"name"`
	CacheDir       string `json:"cacheDir"`
	Pages          uint32 `json:"pages"`
	MaxModuleBytes int    `json:"maxModuleBytes"`
	Size           int    `json:"size"`
}

// workerAnswer is the one line a worker writes: OK, or the module's
// refusal (Error, and Kind: "compile" or "too_large").
type workerAnswer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// refusal is a worker's refusal of a module: the text the serving process
// would have given, wrapping the same sentinel.
type refusal struct {
	msg  string
	kind error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

// errWorkerStart is a worker that could not be started.
var errWorkerStart = errors.New("compile worker not started")

// offload makes sure the module is compiled into the cache directory
// before the serving process compiles it, by the compile worker when the
// host has not compiled it before (in this process or, by its marker in
// the cache directory, in another). Without a worker it does nothing.
func (h *Host) offload(ctx context.Context, name, digest string, bin []byte, pages uint32) error {
	w := h.worker
	if w == nil {
		return nil
	}
	h.mu.Lock()
	_, held := h.modules[moduleKey{pages, digest}]
	h.mu.Unlock()
	if held || h.compiledBefore(digest, pages) {
		return nil
	}
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("host: compile %s: waiting for the compile worker: %w", name, ctx.Err())
	}
	defer func() { <-w.sem }()
	if h.compiledBefore(digest, pages) {
		// The compile this one waited for was of the same module.
		return nil
	}
	start := time.Now()
	err := w.run(ctx, workerRequest{Name: name, CacheDir: h.opts.CacheDir, Pages: pages, MaxModuleBytes: h.opts.MaxModuleBytes, Size: len(bin)}, bin)
	took := time.Since(start)
	var ref *refusal
	switch {
	case err == nil:
		w.runs.Add(1)
		w.nanos.Add(int64(took))
		h.log.Info("compiled in the compile worker", "module", name, "digest", digest, "took", took.Round(time.Millisecond))
		return nil
	case errors.As(err, &ref):
		w.runs.Add(1)
		w.refused.Add(1)
		w.nanos.Add(int64(took))
		return err
	case errors.Is(err, errWorkerStart):
		w.fallback.Add(1)
		h.log.Error("compile worker could not be started: compiling in the serving process, which slows the calls in flight",
			"module", name, "worker", w.cfg.Path, "err", err)
		return nil
	default:
		w.runs.Add(1)
		w.failed.Add(1)
		h.log.Error("compile worker failed: module refused", "module", name, "digest", digest, "took", took.Round(time.Millisecond), "err", err)
		return fmt.Errorf("host: compile %s: %w: %w", name, ErrCompileWorker, err)
	}
}

// run compiles one module in a new worker process.
func (w *workerState) run(ctx context.Context, req workerRequest, bin []byte) error {
	timeout := w.cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, w.cfg.Path, w.cfg.Args...)
	cmd.Env = append(workerEnv(os.Environ()), CompileWorkerEnv+"=1", "GOMAXPROCS=1")
	head, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd.Stdin = io.MultiReader(bytes.NewReader(head), strings.NewReader("\n"), bytes.NewReader(bin))
	var out, stderr tailBuffer
	out.max, stderr.max = 64<<10, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %w", errWorkerStart, err)
	}
	err = cmd.Wait()
	detail := func() string {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return ": " + s
		}
		return ""
	}
	if rctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("no answer within %s%s", timeout, detail())
	}
	if err != nil {
		return fmt.Errorf("%w%s", err, detail())
	}
	var ans workerAnswer
	line, _, _ := strings.Cut(out.String(), "\n")
	if json.Unmarshal([]byte(line), &ans) != nil {
		return fmt.Errorf("answer out of protocol: %q%s", truncate(line, 200), detail())
	}
	switch {
	case ans.OK:
		return nil
	case ans.Kind == "compile":
		return &refusal{ans.Error, ErrCompile}
	case ans.Kind == "too_large":
		return &refusal{ans.Error, ErrModuleTooLarge}
	}
	return fmt.Errorf("answer out of protocol: %q", truncate(line, 200))
}

// workerEnv is the environment a worker inherits, less the settings it
// is started with.
func workerEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, CompileWorkerEnv+"=") && !strings.HasPrefix(kv, "GOMAXPROCS=") {
			out = append(out, kv)
		}
	}
	return out
}

// tailBuffer keeps the first max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// CompileWorkerMain runs this process as a compile worker when
// CompileWorkerEnv is set, and then reports true and the exit code; else
// it does nothing and reports false.
func CompileWorkerMain() (bool, int) {
	if os.Getenv(CompileWorkerEnv) == "" {
		return false, 0
	}
	lowerPriority()
	if err := ServeCompileWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return true, 1
	}
	return true, 0
}

// ServeCompileWorker is the worker's side: it reads one request and its
// module from in, rewrites and compiles the module into the request's
// cache directory as the serving host will ask for it, and writes the
// answer to out. A module that does not compile is an answer, not an
// error; an error is a request out of protocol or an answer not written.
func ServeCompileWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("host: compile worker: request: %w", err)
	}
	var req workerRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("host: compile worker: request: %w", err)
	}
	if req.CacheDir == "" || req.Size < 0 || req.MaxModuleBytes <= 0 || req.Size > req.MaxModuleBytes {
		return fmt.Errorf("host: compile worker: request: cache %q, %d bytes of at most %d", req.CacheDir, req.Size, req.MaxModuleBytes)
	}
	bin := make([]byte, req.Size)
	if _, err := io.ReadFull(r, bin); err != nil {
		return fmt.Errorf("host: compile worker: module: %w", err)
	}
	h, err := New(Options{CacheDir: req.CacheDir, MaxModuleBytes: req.MaxModuleBytes})
	if err != nil {
		return err
	}
	defer h.Close(context.WithoutCancel(ctx))
	ans := workerAnswer{OK: true}
	if err := h.workerCompile(ctx, Source{Name: req.Name, Bytes: bin}, Policy{Limits: abi.Limits{MemoryPages: int(req.Pages)}}); err != nil {
		ans = workerAnswer{Error: err.Error(), Kind: "compile"}
		if errors.Is(err, ErrModuleTooLarge) {
			ans.Kind = "too_large"
		} else if !errors.Is(err, ErrCompile) {
			return err
		}
	}
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	if _, err := out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("host: compile worker: answer: %w", err)
	}
	return nil
}

// compiledMarker is the file that says a module was compiled into the
// cache directory for a memory class: named by what its compiled code
// depends on (the rewrite, wazero's version, the engine's settings).
func (h *Host) compiledMarker(digest string, pages uint32) string {
	return filepath.Join(h.opts.CacheDir, "warden-compiled", fmt.Sprintf("%s-%t-%s-%s-%d-%t-%t.ok",
		wazeroVersion(), closeOnContextDone, rewriteVersion, digest, callStackBudget(pages), metering, stackBound))
}

// compiledBefore reports whether the cache directory holds the module's
// compiled code, by its marker.
func (h *Host) compiledBefore(digest string, pages uint32) bool {
	_, err := os.Stat(h.compiledMarker(digest, pages))
	return err == nil
}

// markCompiled records that the module's compiled code is in the cache
// directory. A marker that cannot be written costs the next process a
// worker's compile, which finds the code in the cache.
func (h *Host) markCompiled(digest string, pages uint32) {
	if h.opts.CacheDir == "" || h.opts.Profile != nil {
		return
	}
	p := h.compiledMarker(digest, pages)
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		_ = os.WriteFile(p, nil, 0o644)
	}
}

var wazeroVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "wazero-" + runtime.Version()
})

// workerCompile is the worker's compile: Precompile's, and for an extism
// module also the unrewritten module, whose exports and imports the
// serving process checks (checkExtismModule).
func (h *Host) workerCompile(ctx context.Context, src Source, pol Policy) error {
	if err := h.Precompile(ctx, src, pol); err != nil {
		return err
	}
	cls, err := h.class(ctx, uint32(pol.withDefaults().Limits.MemoryPages))
	if err != nil {
		return err
	}
	cm, key, err := h.compile(ctx, cls, Digest(src.Bytes), src.Bytes)
	if err != nil {
		return fmt.Errorf("host: compile %s: %w: %w", src.Name, ErrCompile, err)
	}
	defer h.releaseModule(ctx, key)
	if !importsModule(cm, extismEnvModule) {
		return nil
	}
	raw, err := cls.rt.CompileModule(ctx, src.Bytes)
	if err != nil {
		return fmt.Errorf("host: compile %s: %w: %w", src.Name, ErrCompile, err)
	}
	return raw.Close(ctx)
}
