package host

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
)

// Options configure a Host. The zero value is usable.
type Options struct {
	// CacheDir holds compiled code across processes; empty keeps the cache
	// in memory only.
	CacheDir string
	// Logger receives load failures, fail-open and shadow verdicts and
	// plugin log lines; nil discards them.
	Logger *slog.Logger
	// Clock is the real clock a plugin granted the clock capability sees;
	// nil means time.Now. Tests fix it.
	Clock func() time.Time
	// Rand is the randomness a plugin granted the random capability gets;
	// nil means crypto/rand.
	Rand io.Reader
	// MaxModuleBytes bounds a module's size; 0 means 64 MiB.
	MaxModuleBytes int
	// PluginTime is the plugin time each tenant's calls may use per second,
	// across every plugin of this host, and PluginBurst how much of it the
	// tenant may use at once (a token bucket; 0 means PluginTime). A call
	// is charged the time it holds its instance, once it ends, so one call
	// may overdraw the bucket; while it is empty a call is not started: a
	// guard fails as its failure policy says for an unavailable guard
	// (GUARD_UNAVAILABLE), a builtin as FAILED with PLUGIN_UNAVAILABLE.
	// The self-test's tenant (ProbeTenant) is not budgeted. 0 is no budget.
	PluginTime, PluginBurst time.Duration
	// MaxInstances and MaxInstanceBytes bound the instances of every
	// plugin of this host, across tenants: how many are alive, and the
	// linear memory they hold. Before an instance starts, the least
	// recently used idle instances are closed until it fits; a call that
	// finds the budget taken by busy instances waits for room within its
	// deadline, then fails as an unavailable plugin (a guard as its
	// failure policy says). A plugin's first instance, started as it
	// loads, is never refused. 0 is no bound.
	MaxInstances     int
	MaxInstanceBytes int64
	// InstanceIdle closes an instance of a tenant's pool once it has been
	// idle for that long, so that an idle tenant holds no instance; a
	// plugin's spare (which holds no tenant's data) is kept. 0 keeps
	// idle instances.
	InstanceIdle time.Duration
	// Profile, when set, times every direct-ABI guest function of the
	// modules this host compiles (GuestProfile); such a host compiles
	// without the compilation cache and runs slower. For measuring only.
	Profile *GuestProfile
	// CompileWorker, when set, compiles every module the host has never
	// compiled in a separate low-priority process, into CacheDir, which
	// it requires (see CompileWorker).
	CompileWorker *CompileWorker
}

// Host loads and runs plugins. It is safe for concurrent use.
type Host struct {
	opts  Options
	log   *slog.Logger
	cache wazero.CompilationCache

	mu      sync.Mutex
	classes map[uint32]*class // direct-ABI runtimes by memory limit (pages)
	closed  bool
	plugins map[*Plugin]struct{}
	// modules are the direct-ABI compiled modules, shared by digest.
	modules map[moduleKey]*sharedModule
	idleSeq uint64
	// compiling are the compilations under way, which a compile of the
	// same module waits for (the plugins of one module, loaded at once).
	compiling map[moduleKey]chan struct{}
	// budgets is each tenant's plugin time; nil: none.
	budgets *budgets
	// instances is the instance budget and the idle list.
	instances *instanceBudget
	// worker is the compile worker; nil: modules compile in-process.
	worker *workerState
}

// New returns a Host. Close it to release compiled code and runtimes.
func New(opts Options) (*Host, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.MaxModuleBytes == 0 {
		opts.MaxModuleBytes = 64 << 20
	}
	budgets, err := newBudgets(opts.PluginTime, opts.PluginBurst)
	if err != nil {
		return nil, err
	}
	instances, err := newInstanceBudget(opts.MaxInstances, opts.MaxInstanceBytes, opts.InstanceIdle)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var worker *workerState
	if w := opts.CompileWorker; w != nil {
		if opts.CacheDir == "" || opts.Profile != nil || w.Path == "" {
			instances.close()
			return nil, fmt.Errorf("host: compile worker %q: it needs a cache directory, an executable and no profile", w.Path)
		}
		worker = &workerState{cfg: *w, sem: make(chan struct{}, 1)}
	}
	var cache wazero.CompilationCache
	if opts.CacheDir != "" && opts.Profile == nil {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			instances.close()
			return nil, fmt.Errorf("host: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Host{opts: opts, log: log, cache: cache, classes: map[uint32]*class{}, plugins: map[*Plugin]struct{}{},
		modules: map[moduleKey]*sharedModule{}, budgets: budgets, instances: instances, worker: worker}, nil
}

// Close closes every plugin loaded by h and the runtimes behind them.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	plugins := make([]*Plugin, 0, len(h.plugins))
	for p := range h.plugins {
		plugins = append(plugins, p)
	}
	classes := h.classes
	h.classes = nil
	h.mu.Unlock()
	h.instances.close()
	for _, p := range plugins {
		_ = p.Close(ctx)
	}
	for _, c := range classes {
		_ = c.rt.Close(ctx)
	}
	return h.cache.Close(ctx)
}

func (h *Host) forget(p *Plugin) {
	h.mu.Lock()
	delete(h.plugins, p)
	h.mu.Unlock()
}
