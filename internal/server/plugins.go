package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/plugins"
)

// Generation records live in the store (store.GenerationRecord); these
// names keep the server's API whole.
type (
	GenerationEvent  = store.GenerationEvent
	GenerationRecord = store.GenerationRecord
	GenerationLog    = store.GenerationLog
)

// Generation events.
const (
	GenerationInstalled  = store.GenerationInstalled
	GenerationRefused    = store.GenerationRefused
	GenerationRolledBack = store.GenerationRolledBack
)

// Where a candidate came from.
const (
	OriginAdmin = "admin" // the admin API
	OriginStart = "start" // Options.Plugins, loaded by LoadPlugins
	OriginWatch = "watch" // a change in Options.Plugins, found by Scan
	// OriginStore: the slot's desired generation in the store, installed
	// by another instance (or before a restart).
	OriginStore = "store"
	// OriginRollback: a desired generation in the store that serves a
	// kept generation again (POST …/rollback).
	OriginRollback = "rollback"
)

// MemoryGenerations is the in-process GenerationLog, the default.
type MemoryGenerations struct {
	mu      sync.Mutex
	records []GenerationRecord
}

// NewMemoryGenerations returns an empty log.
func NewMemoryGenerations() *MemoryGenerations { return &MemoryGenerations{} }

// RecordGeneration appends r.
func (m *MemoryGenerations) RecordGeneration(_ context.Context, r GenerationRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, r)
	return nil
}

// Generations lists the slot's records, oldest first.
func (m *MemoryGenerations) Generations(_ context.Context, slot string) ([]GenerationRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []GenerationRecord{}
	for _, r := range m.records {
		if r.Slot == slot {
			out = append(out, r)
		}
	}
	return out, nil
}

// pluginFile is one first-party module of the plugin directory.
type pluginFile struct {
	slot string // chain position name, or the builtin's slot name
	base string // file name without .wasm; the sidecar is base+".json"
	want abi.Manifest
}

// pluginFiles are the modules LoadPlugins loads and Scan watches: the
// guards in chain order, then the builtins, named as `make plugins` names
// them.
var pluginFiles = func() []pluginFile {
	var out []pluginFile
	for _, p := range plugins.All {
		out = append(out, pluginFile{slot: p.Name, base: p.File, want: p.Plugin.Manifest})
	}
	return out
}()

// reservedSlot returns the first-party manifest a slot's candidates must
// match in role and phases, if the slot is a first-party one.
func reservedSlot(name string) (abi.Manifest, bool) {
	for _, f := range pluginFiles {
		if f.slot == name {
			return f.want, true
		}
	}
	return abi.Manifest{}, false
}

// Sidecar is the optional <name>.json beside a module in the plugin
// directory. Unknown keys are refused: a misspelt pin must not silently
// leave a module unpinned.
type Sidecar struct {
	// SHA256 pins the module's digest (hex, "sha256:" allowed).
	SHA256 string `json:"sha256,omitempty"`
	// Config is the plugin's configuration, checked against its manifest.
	Config json.RawMessage `json:"config,omitempty"`
}

// parseSidecar decodes a sidecar strictly: one JSON object, known keys,
// each once and in its own case.
func parseSidecar(path string, b []byte) (Sidecar, error) {
	var sc Sidecar
	// Strict (abi.DecodeStrict): a key twice or in another case ("SHA256")
	// must not leave a module pinned one way for one reader and another
	// way, or not at all, for the next.
	if err := abi.DecodeStrict(b, &sc); err != nil {
		if strings.HasSuffix(err.Error(), ": trailing data") {
			return Sidecar{}, fmt.Errorf("%w %s: more than one JSON value", ErrSidecar, path)
		}
		return Sidecar{}, fmt.Errorf("%w %s: %w", ErrSidecar, path, err)
	}
	if bytes.Equal(bytes.TrimSpace(sc.Config), []byte("null")) {
		sc.Config = nil
	}
	return sc, nil
}

// moduleFile is what one read of a plugin file found.
type moduleFile struct {
	path, sidecarPath string
	module, sidecar   []byte // sidecar is nil when there is none
	digest            string // of module
	sidecarDigest     string // of sidecar; "" when there is none
}

// sharedModuleFile is the first-party module (internal/firstparty), which
// serves each first-party slot whose own file the plugin directory lacks.
const sharedModuleFile = "firstparty.wasm"

// readPluginFile reads a module and its sidecar, if any. Without the
// slot's own module, a first-party slot serves the first-party module of
// the directory bound to its plugin (host.SelectPlugin), so that one
// module, compiled once, serves every slot, and a slot's own file, written
// beside it, takes that slot's place.
func readPluginFile(dir string, f pluginFile) (moduleFile, error) {
	m := moduleFile{path: filepath.Join(dir, f.base+".wasm"), sidecarPath: filepath.Join(dir, f.base+".json")}
	var err error
	if m.module, err = os.ReadFile(m.path); err != nil {
		shared, serr := os.ReadFile(filepath.Join(dir, sharedModuleFile))
		switch {
		case !errors.Is(err, fs.ErrNotExist):
			return m, fmt.Errorf("server: plugin %s: %w", m.path, pathErr(err))
		case serr != nil:
			return m, fmt.Errorf("server: plugin %s: %w (nor is there a %s serving it)", m.path, pathErr(err), sharedModuleFile)
		}
		m.path, m.module = filepath.Join(dir, sharedModuleFile), host.SelectPlugin(shared, f.want.Name)
	}
	m.digest = host.Digest(m.module)
	switch m.sidecar, err = os.ReadFile(m.sidecarPath); {
	case errors.Is(err, fs.ErrNotExist):
		m.sidecar = nil
	case err != nil:
		return m, fmt.Errorf("server: plugin %s: %w", m.sidecarPath, pathErr(err))
	default:
		m.sidecarDigest = host.Digest(m.sidecar)
	}
	return m, nil
}

// pathErr drops the path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// source makes the module a candidate: its sidecar's pin and config.
func (m moduleFile) source() (host.Source, json.RawMessage, error) {
	src := host.Source{Name: filepath.Base(m.path), Bytes: m.module}
	if m.sidecar == nil {
		return src, nil, nil
	}
	sc, err := parseSidecar(m.sidecarPath, m.sidecar)
	if err != nil {
		return host.Source{}, nil, err
	}
	src.SHA256 = sc.SHA256
	return src, sc.Config, nil
}

// LoadPlugins loads every first-party module of Options.Plugins as a slot
// (the guards by chain position name, the builtins as control, node and
// env), so that every session created afterwards runs them as wasm, and a
// later swap of a slot reaches sessions already open. Call it once, after
// New and before serving; it does nothing without Options.Plugins. A
// missing or bad module, or a bad sidecar, is an error naming the file;
// the server must then not serve (Close releases what was loaded).
func (s *Server) LoadPlugins(ctx context.Context) error {
	dir := s.opt.Plugins
	switch {
	case dir == "":
		return nil
	case s.opt.Host == nil:
		return fmt.Errorf("%w: a plugin directory without a plugin host", ErrConfig)
	case s.opt.Guards != nil || s.opt.Builtins != nil:
		return fmt.Errorf("%w: a plugin directory with Guards or Builtins", ErrConfig)
	}
	ps := s.pluginsOf()
	type loaded struct {
		m      moduleFile
		src    host.Source
		config json.RawMessage
	}
	var mods []loaded
	for _, f := range pluginFiles {
		m, err := readPluginFile(dir, f)
		if err != nil {
			return err
		}
		src, config, err := m.source()
		if err != nil {
			return err
		}
		mods = append(mods, loaded{m, src, config})
	}
	// Compile them all at once, one per CPU; the installs that follow,
	// one at a time, find them compiled. A module that does not compile
	// is reported by its install, naming its file.
	// The slots bound from one module (the first-party module) share its
	// compilation: it is compiled once.
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	compiling := map[string]bool{}
	for _, l := range mods {
		if d := host.ModuleDigest(l.src.Bytes); compiling[d] {
			continue
		} else {
			compiling[d] = true
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_ = s.opt.Host.Precompile(ctx, l.src, s.opt.Policy)
		})
	}
	wg.Wait()
	for i, f := range pluginFiles {
		m, src, config := mods[i].m, mods[i].src, mods[i].config
		if _, _, _, err := s.install(ctx, f.slot, src, config, OriginStart, filepath.Base(m.path)); err != nil {
			return fmt.Errorf("server: plugin %s: %w", m.path, err)
		}
		ps.watchMu.Lock()
		ps.files[f.slot] = &fileState{attempted: m.key()}
		ps.watchMu.Unlock()
	}
	return nil
}

// install loads a candidate as the next generation of a slot (the first
// one creates the slot): digest pin, compile, config, start, fit to a
// first-party slot, self-test, then an atomic swap. A candidate that fails
// leaves the serving generation alone. Either way the event is logged and
// recorded. LoadPlugins installs through here; the admin API and Scan
// propose a candidate instead (propose), which every live instance
// prepares and then installs through installLocked.
func (s *Server) install(ctx context.Context, name string, src host.Source, config json.RawMessage, origin, file string) (*host.Slot, host.GenerationInfo, bool, error) {
	if s.opt.Host == nil {
		return nil, host.GenerationInfo{}, false, fmt.Errorf("%w: no plugin host", ErrConfig)
	}
	// One install or rollback at a time: a slot's generations are serial by
	// nature, and it keeps two first installs of one name from racing.
	// The map lock is held only to read and add, never while compiling, so
	// sessions being created meanwhile are not held up.
	s.installMu.Lock()
	defer s.installMu.Unlock()
	return s.installLocked(ctx, name, src, config, origin, file, 0)
}

// installLocked is install with installMu held. A generation loaded at
// start (OriginStart) is written to the store as the slot's first one
// (publish); any other is the store's desired generation from (which its
// proposer records with its origin: admin, watch or rollback).
func (s *Server) installLocked(ctx context.Context, name string, src host.Source, config json.RawMessage, origin, file string, from uint64) (*host.Slot, host.GenerationInfo, bool, error) {
	pol := s.slotPolicy(name, config)
	rec := GenerationRecord{Slot: name, Digest: host.Digest(src.Bytes), Origin: origin, File: file}
	if origin == OriginRollback {
		rec.Origin = OriginAdmin // the event says it is a rollback
	}
	s.slotMu.Lock()
	sl, exists := s.slots[name]
	s.slotMu.Unlock()
	var (
		info host.GenerationInfo
		err  error
	)
	number := s.nextNumber(ctx, name, rec.Digest, config, origin, from)
	if exists {
		info, err = sl.SwapAs(ctx, src, pol, s.slotTest(name), number)
	} else {
		sl, err = s.opt.Host.NewSlotAs(ctx, name, src, pol, s.slotTest(name), number)
		if err == nil {
			info = sl.Current()
		}
	}
	if err != nil {
		rec.Event, rec.Reason = GenerationRefused, err.Error()
		s.record(ctx, rec)
		s.log.Warn("plugin candidate refused", "slot", name, "file", file, "digest", rec.Digest, "origin", origin, "err", err)
		return nil, host.GenerationInfo{}, false, err
	}
	if !exists {
		s.slotMu.Lock()
		s.slots[name] = sl
		s.slotMu.Unlock()
	}
	rec.Event, rec.Number, rec.Ref, rec.Digest = GenerationInstalled, info.Number, info.Ref, info.Digest
	if origin == OriginRollback {
		rec.Event = GenerationRolledBack
	}
	s.record(ctx, rec)
	if exists {
		s.flushCounts(ctx, name) // the retired generation's, as its calls left them
	}
	s.log.Info("plugin generation installed", "slot", name, "generation", info.Number, "ref", info.Ref,
		"digest", info.Digest, "origin", origin, "file", file)
	if origin == OriginStart {
		s.publish(ctx, name, src.Bytes, config, info, file)
	}
	return sl, info, !exists, nil
}

// slotPolicy is the policy a slot's candidates load under. A first-party
// slot allows its own plugin's capabilities and no more, whatever a
// candidate's manifest asks for; any other slot what the operator's
// Policy grants (nothing by default).
func (s *Server) slotPolicy(name string, config json.RawMessage) host.Policy {
	pol := s.opt.Policy
	pol.Config = config
	if want, reserved := reservedSlot(name); reserved {
		pol.Capabilities = want.Capabilities
	}
	return pol
}

// record stamps and appends a generation record. A log that fails does not
// undo what happened; it is reported.
func (s *Server) record(ctx context.Context, r GenerationRecord) {
	r.Time, r.Instance = s.opt.Now().UTC(), s.opt.Instance
	if err := s.pluginsOf().log.RecordGeneration(context.WithoutCancel(ctx), r); err != nil {
		s.log.Error("generation not recorded", "slot", r.Slot, "event", r.Event, "digest", r.Digest, "err", err)
	}
}

// refusals lists a slot's refused candidates, oldest first. A log that
// cannot be read leaves the list out rather than the slot.
func (s *Server) refusals(ctx context.Context, name string) []GenerationRecord {
	recs, err := s.pluginsOf().log.Generations(ctx, name)
	if err != nil {
		s.log.Error("generations not read", "slot", name, "err", err)
		return nil
	}
	out := []GenerationRecord{}
	for _, r := range recs {
		if r.Event == GenerationRefused {
			out = append(out, r)
		}
	}
	return out
}

// slotTest is the self-test of a slot's candidates: a first-party slot
// takes only a plugin of its role and phases; a plugin one of whose
// instances holds more linear memory than this process's whole instance
// budget could never start an instance for a tenant here; then
// Options.SelfTest.
func (s *Server) slotTest(name string) host.SelfTest {
	want, reserved := reservedSlot(name)
	return func(ctx context.Context, p *host.Plugin) error {
		if m := p.Manifest(); reserved && (m.Role != want.Role || !samePhases(m.Phases, want.Phases)) {
			return fmt.Errorf("%w: slot %s takes a %s %v, %s is a %s %v", ErrSlotRole, name, want.Role, want.Phases, p.Ref(), m.Role, m.Phases)
		}
		if budget, used := s.opt.Host.InstanceUsage().MaxBytes, p.Stats().InstanceMemoryBytes; budget > 0 && used > budget {
			return fmt.Errorf("%w: an instance of %s holds %d bytes of linear memory, over this instance's whole plugin instance budget of %d bytes: no tenant's call could start one",
				ErrOverBudget, p.Ref(), used, budget)
		}
		return s.opt.SelfTest(ctx, p)
	}
}

func samePhases(a, b []abi.Phase) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		if !slices.Contains(b, p) {
			return false
		}
	}
	return true
}

// slotBuiltin serves a builtin through its slot, so a swap reaches the
// sessions already open.
type slotBuiltin struct{ sl *host.Slot }

func (b slotBuiltin) Manifest() abi.Manifest { return b.sl.Plugin().Manifest() }

func (b slotBuiltin) Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	return b.sl.Builtin(ctx, tenant, req)
}

// Identity names the generation serving the builtin (chain.Identified),
// for the TOOL events of its calls.
func (b slotBuiltin) Identity() (string, uint64) {
	cur := b.sl.Current()
	return cur.Ref, cur.Number
}

// pluginState is a server's runtime state of slots beyond the host's.
type pluginState struct {
	log GenerationLog
	// control is the slots' control plane: Options.Generations when it is
	// a store.SlotControl (a database the instances share), else one in
	// this process. applied is what this instance serves of it, by slot;
	// installMu guards it.
	control store.SlotControl
	applied map[string]*appliedSlot
	// prepared are the candidates this instance holds ready, by slot;
	// preparing the number of the candidate being prepared, by slot.
	// installMu guards both. prepCtx ends the preparations (Close), and
	// prepWG waits for them.
	prepared   map[string]*preparedCandidate
	preparing  map[string]uint64
	prepCtx    context.Context
	prepCancel context.CancelFunc
	prepWG     sync.WaitGroup
	// counts writes this instance's counters of its generations to the
	// store (Options.Generations when it is a store.SlotCounters).
	counts *genCounts

	// watchMu serialises scans and guards files.
	watchMu sync.Mutex
	files   map[string]*fileState // by slot
}

// pluginStateMu guards the creation of every server's pluginState.
var pluginStateMu sync.Mutex

// pluginsOf returns the server's plugin state, made on first use with
// Options.Generations or a MemoryGenerations.
func (s *Server) pluginsOf() *pluginState {
	pluginStateMu.Lock()
	defer pluginStateMu.Unlock()
	if s.opt.plugins == nil {
		log := s.opt.Generations
		if log == nil {
			log = NewMemoryGenerations()
		}
		control, ok := log.(store.SlotControl)
		if !ok {
			control = store.NewMemorySlots()
		}
		counters, ok := log.(store.SlotCounters)
		if !ok {
			counters = store.NewMemorySlotCounts(control)
		}
		s.opt.plugins = &pluginState{log: log, control: control, applied: map[string]*appliedSlot{}, files: map[string]*fileState{},
			counts: newGenCounts(counters), prepared: map[string]*preparedCandidate{}, preparing: map[string]uint64{}}
		s.opt.plugins.prepCtx, s.opt.plugins.prepCancel = context.WithCancel(context.Background())
	}
	return s.opt.plugins
}
