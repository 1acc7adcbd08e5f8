package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store"
)

// maxUpload bounds an install request: a base64 module of up to 64 MiB.
const maxUpload = 88 << 20

var slotName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// Generation is one generation of a slot as the admin API shows it.
type Generation struct {
	Number    uint64     `json:"number"`
	Ref       string     `json:"ref"`
	Digest    string     `json:"digest"`
	Installed time.Time  `json:"installed"`
	Retired   *time.Time `json:"retired,omitempty"`
	// Stats are the generation's counters: the serving one's now, a
	// retired one's as its calls left them (the newest generations only;
	// absent for older ones).
	Stats *SlotStats `json:"stats,omitempty"`
}

// SlotInfo is a slot: its serving generation, every generation installed,
// the candidates it refused, and the serving plugin's counters.
type SlotInfo struct {
	Name        string       `json:"name"`
	Current     Generation   `json:"current"`
	Generations []Generation `json:"generations"`
	// Refused are the candidates the slot refused (admin API, plugin
	// directory), oldest first, from the generation log: with a shared
	// store, every instance's.
	Refused []GenerationRecord `json:"refused,omitempty"`
	Stats   SlotStats          `json:"stats"`
	// Serving is the store generation this instance serves (0: none of
	// the store's); Desired is the slot's desired generation in the store
	// and Kept its kept generations, oldest first, which a rollback can
	// name (?to=N). Instances is what each instance sharing the store last
	// reported: the generation it serves, since when, and the last one it
	// refused, with why. A kept generation has the counters every
	// instance wrote of it (Counts).
	Serving   uint64                `json:"serving"`
	Desired   *store.SlotGeneration `json:"desired,omitempty"`
	Kept      []KeptGeneration      `json:"kept"`
	Instances []store.SlotStatus    `json:"instances"`
	// Rollout is how far the slot's newest candidate (or desired
	// generation) has reached the live instances; in the answer of an
	// install or a rollback, the one it recorded.
	Rollout *Rollout `json:"rollout,omitempty"`
}

// SlotStats are the serving plugin's counters as the admin API shows
// them (host.Stats, in snake_case with units in the names).
type SlotStats struct {
	Plugin string `json:"plugin"`
	Digest string `json:"digest"`
	// Results the plugin reported, by kind.
	Pass     uint64 `json:"pass"`
	Success  uint64 `json:"success"`
	Failed   uint64 `json:"failed"`
	Rejected uint64 `json:"rejected"`
	Deferred uint64 `json:"deferred"`
	// Failures of the plugin itself.
	Traps          uint64 `json:"traps"`
	Timeouts       uint64 `json:"timeouts"`
	MemoryLimits   uint64 `json:"memory_limits"`
	Violations     uint64 `json:"violations"`
	OutputTooLarge uint64 `json:"output_too_large"`
	InputTooLarge  uint64 `json:"input_too_large"`
	Unavailable    uint64 `json:"unavailable"`
	// Failure-policy outcomes of guards.
	FailOpen      uint64 `json:"fail_open"`
	ShadowDiffers uint64 `json:"shadow_differs"`
	// Instances alive now (idle and busy), idle in the pool, created and
	// closed since load; calls running now.
	InstancesLive    int64  `json:"instances_live"`
	InstancesIdle    int    `json:"instances_idle"`
	InstancesCreated uint64 `json:"instances_created"`
	InstancesClosed  uint64 `json:"instances_closed"`
	InFlight         int64  `json:"in_flight"`
	// Of the instances closed, those evicted to make room in the
	// process's instance budget and those reclaimed after the idle time;
	// the linear memory the live instances hold; the calls that waited
	// for room in the budget, and those that found none in time.
	InstancesEvicted     uint64 `json:"instances_evicted"`
	InstancesReclaimed   uint64 `json:"instances_reclaimed"`
	InstancesMemoryBytes int64  `json:"instances_memory_bytes"`
	BudgetWaits          uint64 `json:"budget_waits"`
	BudgetRefused        uint64 `json:"budget_refused"`
	// Calls and their total latency cover every call; Latency counts them
	// per bound.
	Calls          uint64    `json:"calls"`
	LatencyMsTotal float64   `json:"latency_ms_total"`
	Latency        Histogram `json:"latency"`
	// MemoryLimitPages is the per-instance memory limit in 64 KiB pages;
	// InstanceMemoryBytesMax the largest linear memory an instance reached.
	MemoryLimitPages       int   `json:"memory_limit_pages"`
	InstanceMemoryBytesMax int64 `json:"instance_memory_bytes_max"`
	// Probes are the load check's and self-tests' calls; calls, latency
	// and the results leave them out.
	Probes uint64 `json:"probes"`
}

// Histogram counts calls by latency: Counts[i] the calls of at most
// BoundsMs[i] milliseconds (and above the bound before); the last count,
// one more than the bounds, the calls above the last bound.
type Histogram struct {
	BoundsMs []float64 `json:"bounds_ms"`
	Counts   []uint64  `json:"counts"`
}

func slotStats(st host.Stats) SlotStats {
	h := Histogram{BoundsMs: make([]float64, 0, len(host.LatencyBuckets)), Counts: append([]uint64{}, st.Latency...)}
	for _, b := range host.LatencyBuckets {
		h.BoundsMs = append(h.BoundsMs, ms(b))
	}
	return SlotStats{Plugin: st.Plugin, Digest: st.Digest,
		Pass: st.Pass, Success: st.Success, Failed: st.Failed, Rejected: st.Rejected, Deferred: st.Deferred,
		Traps: st.Traps, Timeouts: st.Timeouts, MemoryLimits: st.MemoryLimits, Violations: st.Violations,
		OutputTooLarge: st.OutputTooLarge, InputTooLarge: st.InputTooLarge, Unavailable: st.Unavailable,
		FailOpen: st.FailOpen, ShadowDiffers: st.ShadowDiffers,
		InstancesLive: st.InstancesLive, InstancesIdle: st.InstancesIdle, InstancesCreated: st.InstancesCreated,
		InstancesClosed: st.InstancesClosed, InFlight: st.InFlight,
		InstancesEvicted: st.InstancesEvicted, InstancesReclaimed: st.InstancesReclaimed, InstancesMemoryBytes: st.InstancesMemoryBytes,
		BudgetWaits: st.BudgetWaits, BudgetRefused: st.BudgetRefused,
		Calls: st.Calls, LatencyMsTotal: ms(st.TotalLatency), Latency: h,
		MemoryLimitPages: st.MemoryPages, InstanceMemoryBytesMax: st.InstanceMemoryBytes, Probes: st.Probes}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func generation(g host.GenerationInfo) Generation {
	out := Generation{Number: g.Number, Ref: g.Ref, Digest: g.Digest, Installed: g.Installed}
	if !g.Retired.IsZero() {
		r := g.Retired
		out.Retired = &r
	}
	return out
}

// slotInfo is a slot as the admin API shows it; sl nil: a slot whose
// first generation is a candidate not served here yet.
func (s *Server) slotInfo(ctx context.Context, name string, sl *host.Slot) SlotInfo {
	in := SlotInfo{Name: name, Generations: []Generation{}, Refused: s.refusals(ctx, name), Stats: slotStats(host.Stats{})}
	if sl != nil {
		in.Current, in.Stats = generation(sl.Current()), slotStats(sl.Plugin().Stats())
		for _, g := range sl.History() {
			gen := generation(g)
			if st, ok := sl.GenerationStats(g.Number); ok {
				ss := slotStats(st)
				gen.Stats = &ss
			}
			in.Generations = append(in.Generations, gen)
		}
	}
	ps := s.pluginsOf()
	s.installMu.Lock()
	if a := ps.applied[name]; a != nil {
		in.Serving = a.number
	}
	s.installMu.Unlock()
	in.Kept, in.Instances = []KeptGeneration{}, []store.SlotStatus{}
	if kept, err := ps.control.SlotGenerations(ctx, name); err != nil {
		s.log.Error("slot generations not read", "slot", name, "err", err)
	} else if len(kept) > 0 {
		in.Kept, in.Desired = s.keptWithCounts(ctx, name, kept), &kept[len(kept)-1]
	}
	if sts, err := ps.control.SlotStatuses(ctx, name); err != nil {
		s.log.Error("slot status not read", "slot", name, "err", err)
	} else {
		in.Instances = sts
	}
	var desired uint64
	if in.Desired != nil {
		desired = in.Desired.Number
	}
	in.Rollout = s.latestRollout(ctx, name, desired)
	return in
}

func (s *Server) listSlots(w http.ResponseWriter, r *http.Request) error {
	s.slotMu.Lock()
	slots := make(map[string]*host.Slot, len(s.slots))
	for n, sl := range s.slots {
		slots[n] = sl
	}
	s.slotMu.Unlock()
	out := []SlotInfo{}
	for n, sl := range slots {
		out = append(out, s.slotInfo(r.Context(), n, sl))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	writeJSON(w, http.StatusOK, map[string]any{"slots": out})
	return nil
}

func (s *Server) slot(name string) (*host.Slot, error) {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	sl, ok := s.slots[name]
	if !ok {
		return nil, fail(http.StatusNotFound, CodeSlotNotFound, "no slot "+name)
	}
	return sl, nil
}

func (s *Server) getSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	sl, err := s.slot(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.slotInfo(r.Context(), name, sl))
	return nil
}

// Install is the body of an install request.
type Install struct {
	// Module is the .wasm module (base64 in JSON).
	Module []byte `json:"module"`
	// SHA256 optionally pins the module's digest (hex, "sha256:" allowed).
	SHA256 string `json:"sha256,omitempty"`
	// Config is the plugin's configuration, checked against its manifest.
	Config json.RawMessage `json:"config,omitempty"`
}

// installSlot records a module as a slot's candidate (the first one
// creates the slot) in the store: every live instance prepares it (pin,
// compile, config, start, load check, self-test) in the background, and
// once every one has it ready it becomes the desired generation and each
// swaps to it atomically. A candidate any live instance refuses serves
// nowhere; the desired generation stays.
func (s *Server) installSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	if !slotName.MatchString(name) {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "slot name must match "+slotName.String())
	}
	var req Install
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/wasm" {
		// The module as the body, unencoded: a several-MiB module skips
		// base64 and the JSON scanner. The pin is ?sha256=, the config the
		// Warden-Config header (JSON).
		if err := readModule(w, r, &req); err != nil {
			return err
		}
	} else if err := decode(w, r, maxUpload, &req); err != nil {
		return err
	}
	if len(req.Module) == 0 {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "module is required")
	}
	wait, err := parseWait(r, waitFor{})
	if err != nil {
		return err
	}
	_, err = s.slot(name)
	created := err != nil
	g := store.SlotGeneration{Slot: name, Digest: host.Digest(req.Module), Config: req.Config, Origin: store.SlotOriginAdmin}
	c, _, err := s.propose(context.WithoutCancel(r.Context()), g, req.Module, req.SHA256)
	if err != nil {
		return candidateError(err)
	}
	return s.answerRollout(w, r, name, c.Number, created, wait)
}

// readModule reads an application/wasm install request.
func readModule(w http.ResponseWriter, r *http.Request, req *Install) error {
	for k := range r.URL.Query() {
		if k != "sha256" && k != "wait" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	req.SHA256 = r.URL.Query().Get("sha256")
	if c := r.Header.Get("Warden-Config"); c != "" {
		if !json.Valid([]byte(c)) {
			return fail(http.StatusBadRequest, CodeBadJSON, "the Warden-Config header is not JSON")
		}
		if err := abi.CheckDuplicateKeys([]byte(c)); err != nil {
			return fail(http.StatusBadRequest, CodeInvalidBody, "the Warden-Config header: "+strings.TrimPrefix(err.Error(), "abi: strict json: "))
		}
		req.Config = json.RawMessage(c)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpload))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the module exceeds %d bytes", maxUpload))
	}
	if err != nil {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "the module could not be read: "+err.Error())
	}
	req.Module = b
	return nil
}

// candidateError reports why a candidate was refused.
func candidateError(err error) error {
	var ge *host.GrantError
	switch {
	case errors.As(err, &ge):
		return fail(http.StatusForbidden, CodeCapabilityNotGranted, grantMessage(ge))
	case errors.Is(err, host.ErrDigestMismatch):
		return fail(http.StatusUnprocessableEntity, CodeDigestMismatch, err.Error())
	case errors.Is(err, host.ErrModuleTooLarge):
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, err.Error())
	case errors.Is(err, ErrOverBudget):
		return fail(http.StatusUnprocessableEntity, CodePluginRejected, err.Error())
	case errors.Is(err, ErrSelfTest), errors.Is(err, host.ErrLoadCheck):
		return fail(http.StatusUnprocessableEntity, CodeSelfTestFailed, err.Error())
	default:
		return fail(http.StatusUnprocessableEntity, CodePluginRejected, err.Error())
	}
}

// refusal is the error code and message the API answers a refused
// candidate with.
func refusal(err error) (code, message string) {
	var ae *apiError
	if errors.As(candidateError(err), &ae) {
		return ae.code, ae.message
	}
	return CodePluginRejected, err.Error()
}

// grantMessage says what a refused candidate asked for and what its slot
// allows.
func grantMessage(ge *host.GrantError) string {
	list := func(cs []abi.Capability) string {
		if len(cs) == 0 {
			return "none"
		}
		s := make([]string, len(cs))
		for i, c := range cs {
			s[i] = string(c)
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s asks for capabilities the slot does not allow: it asks for %s; the slot allows %s (not allowed: %s)",
		ge.Plugin, list(ge.Asked), list(ge.Granted), list(ge.Excess))
}

// rollbackSlot proposes a kept generation (?to=N; by default the kept one
// before the desired one) as the slot's next candidate: it serves again,
// as the slot's next generation, once every live instance has it ready.
func (s *Server) rollbackSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	if _, err := s.slot(name); err != nil {
		return err
	}
	wait, err := parseWait(r, waitFor{})
	if err != nil {
		return err
	}
	var to uint64
	for k, v := range r.URL.Query() {
		if k == "wait" {
			continue
		}
		if k != "to" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
		n, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil || n == 0 || len(v) > 1 {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "to must be one generation number, 1 or more")
		}
		to = n
	}
	c, err := s.rollback(context.WithoutCancel(r.Context()), name, to)
	if err != nil {
		return rollbackError(err)
	}
	return s.answerRollout(w, r, name, c.Number, false, wait)
}

// DefaultSelfTest calls a candidate once in its role with an empty request
// and refuses it when the plugin itself failed (trapped, timed out, broke
// the result contract or was unavailable). What the plugin decides about
// the empty call does not matter; that it decides does.
func DefaultSelfTest(ctx context.Context, p *host.Plugin) error {
	m := p.Manifest()
	var v abi.Verdict
	switch m.Role {
	case abi.RoleGuard:
		phase := abi.PhaseBefore
		if len(m.Phases) > 0 {
			phase = m.Phases[0]
		}
		v = p.Guard(ctx, host.ProbeTenant, &abi.Request{Phase: phase, Tool: "self_test", Args: json.RawMessage(`{}`)})
	case abi.RoleBuiltin:
		tool := "self_test"
		if len(m.Tools) > 0 {
			tool = m.Tools[0].Name
		}
		v = p.Builtin(ctx, host.ProbeTenant, &abi.Request{Tool: tool, Args: json.RawMessage(`{}`)})
	default:
		return fmt.Errorf("%w: role %q", ErrSelfTest, m.Role)
	}
	if o := v.Observation; o != nil {
		switch o.Code {
		case abi.PluginTrap, abi.PluginTimeout, abi.PluginContractViolation, abi.PluginUnavailable,
			abi.GuardUnavailable, abi.PluginOutputTooLarge, abi.PluginMemoryLimit:
			return fmt.Errorf("%w: %s: %s", ErrSelfTest, o.Code, o.Text)
		}
	}
	return nil
}
