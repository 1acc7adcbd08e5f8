package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store"
)

// SlotPoll is how often Follow reads the slots' desired generations from
// the store when no change notice arrives: on SQLite always, on
// PostgreSQL as the fallback of LISTEN/NOTIFY.
const SlotPoll = 2 * time.Second

// appliedSlot is what this instance serves of a slot's generations in the
// store.
type appliedSlot struct {
	number uint64          // the store generation served; 0 for none
	digest string          // its module's
	config json.RawMessage // its configuration
	since  time.Time
	// refused is the last store generation this instance refused, and why.
	refused uint64
	reason  string
	// prepared is the last candidate this instance holds ready.
	prepared uint64
	// code and message are the API's answer to the last candidate this
	// instance refused (refused).
	code, message string
}

// instanceName names this instance in the slots' rollout status.
func (s *Server) instanceName() string {
	if s.opt.Instance != "" {
		return s.opt.Instance
	}
	return "local"
}

// publish writes a generation this instance loaded from its plugin
// directory at start to the store: it becomes generation 1 only of a slot
// the store has none of; otherwise the store's desired generation is
// served (SyncSlots). Every later generation is a candidate (propose).
// installMu is held.
func (s *Server) publish(ctx context.Context, name string, module []byte, config json.RawMessage, info host.GenerationInfo, file string) {
	ps := s.pluginsOf()
	g := store.SlotGeneration{Slot: name, Digest: info.Digest, Config: config, Ref: info.Ref, Origin: store.SlotOriginStart, File: file,
		Instance: s.opt.Instance, Time: s.opt.Now().UTC()}
	got, _, err := ps.control.PutSlotGeneration(context.WithoutCancel(ctx), g, module, true)
	if err != nil {
		s.log.Error("generation not written to the store; other instances do not serve it", "slot", name, "digest", info.Digest, "err", err)
		return
	}
	if got.Digest != info.Digest || !store.SameConfig(got.Config, config) {
		return // the store's desired generation differs: SyncSlots serves it
	}
	s.applied(name, got, time.Now())
}

// applied notes that this instance serves store generation g, and reports
// it. installMu is held.
func (s *Server) applied(name string, g store.SlotGeneration, since time.Time) {
	a := s.pluginsOf().appliedOf(name)
	a.number, a.digest, a.config, a.since = g.Number, g.Digest, g.Config, since
	s.reportSlot(name, a)
}

// appliedOf returns the slot's appliedSlot, made on first use. installMu
// is held.
func (ps *pluginState) appliedOf(name string) *appliedSlot {
	a := ps.applied[name]
	if a == nil {
		a = &appliedSlot{}
		ps.applied[name] = a
	}
	return a
}

// reportSlot writes what this instance serves of a slot to the store.
func (s *Server) reportSlot(name string, a *appliedSlot) {
	st := store.SlotStatus{Slot: name, Instance: s.instanceName(), Serving: a.number, Digest: a.digest, Since: a.since,
		Refused: a.refused, Reason: a.reason, Prepared: a.prepared, Updated: s.opt.Now().UTC()}
	if err := s.pluginsOf().control.ReportSlot(context.Background(), st); err != nil {
		s.log.Error("slot status not reported", "slot", name, "err", err)
	}
}

// SyncSlots makes this instance serve every slot's desired generation in
// the store, and take its part in the slots' candidates. A desired
// generation it does not serve yet is installed: the one it prepared, or
// else one read from the store, with the same checks as any candidate
// (an instance that started or came back after the candidate was
// decided). A generation it refuses is reported (and recorded) and not
// tried again; the slot keeps serving what it served. A candidate being
// prepared that this instance has not answered is prepared in the
// background, and a candidate every live instance answered, or whose
// deadline passed, is decided. It fails only when the store cannot be
// read.
func (s *Server) SyncSlots(ctx context.Context) error {
	if s.opt.Host == nil {
		return nil
	}
	ps := s.pluginsOf()
	desired, err := ps.control.DesiredSlots(ctx)
	if err != nil {
		return fmt.Errorf("server: slots' desired generations: %w", err)
	}
	for _, d := range desired {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("server: sync slots: %w", err)
		}
		s.applyDesired(context.WithoutCancel(ctx), d)
	}
	pending, err := ps.control.PendingSlotCandidates(ctx)
	if err != nil {
		return fmt.Errorf("server: slots' candidates: %w", err)
	}
	s.dropPrepared(pending)
	for _, c := range pending {
		s.advance(context.WithoutCancel(ctx), c)
	}
	return nil
}

// applyDesired serves a slot's desired generation d, unless it does, or
// refused it, already, or serves a later one: the store's numbers only
// grow (a rollback is a new generation), so a d read before an install
// this instance has made since is stale and is never applied over it. A
// candidate this instance prepared is swapped in from what it holds; its
// module is compiled already.
func (s *Server) applyDesired(ctx context.Context, d store.SlotGeneration) {
	s.installMu.Lock()
	defer s.installMu.Unlock()
	ps := s.pluginsOf()
	a := ps.applied[d.Slot]
	if a != nil && (a.number >= d.Number || a.refused == d.Number) {
		return
	}
	s.slotMu.Lock()
	sl, exists := s.slots[d.Slot]
	s.slotMu.Unlock()
	if exists && a != nil && sl.Current().Digest == d.Digest && store.SameConfig(a.config, d.Config) {
		s.applied(d.Slot, d, a.since) // the same module and configuration, numbered anew
		return
	}
	var src host.Source
	if pc := ps.prepared[d.Slot]; pc != nil && pc.number == d.Number {
		src = pc.src
		// The prepared plugin holds its compiled module until the swap's
		// load has taken it.
		defer func() {
			_ = pc.p.Close(ctx)
			delete(ps.prepared, d.Slot)
		}()
	} else {
		module, err := ps.control.SlotModule(ctx, d.Digest)
		if err != nil {
			s.log.Error("desired generation not read from the store", "slot", d.Slot, "generation", d.Number, "err", err)
			return // tried again at the next sync
		}
		src = host.Source{Name: d.Slot, Bytes: module, SHA256: d.Digest}
	}
	// The instance that proposed it records it as it came (admin, watch
	// or rollback); the others as from the store.
	origin := OriginStore
	if d.Instance == s.opt.Instance && d.Origin != store.SlotOriginStart {
		origin = d.Origin
	}
	if _, _, _, err := s.installLocked(ctx, d.Slot, src, d.Config, origin, d.File, d.Number); err != nil {
		if ctx.Err() != nil {
			return // the server is closing: no refusal to report
		}
		a = ps.appliedOf(d.Slot)
		a.refused, a.reason = d.Number, err.Error()
		s.reportSlot(d.Slot, a)
		return
	}
	s.applied(d.Slot, d, time.Now())
	s.log.Info("slot follows the store", "slot", d.Slot, "generation", d.Number, "digest", d.Digest, "installed_by", d.Instance)
}

// DefaultPrepareDeadline is how long the live instances have to prepare a
// candidate when Options.PrepareDeadline is 0.
const DefaultPrepareDeadline = 2 * time.Minute

// preparedCandidate is a candidate this instance loaded and checked, held
// (with its compiled module) until it becomes the desired generation.
type preparedCandidate struct {
	number uint64
	p      *host.Plugin
	src    host.Source
}

// propose records a candidate generation of a slot in the store (module
// nil: a kept generation's, a rollback) and starts this instance's
// preparation of it; every other instance sharing the store prepares it
// once it reads it. A module that does not match its pin is refused here.
// added is false when nothing new was recorded: c is then the candidate
// being prepared with the same module and configuration, or the desired
// generation that has them.
func (s *Server) propose(ctx context.Context, g store.SlotGeneration, module []byte, pin string) (c store.SlotCandidate, added bool, err error) {
	if s.opt.Host == nil {
		return c, false, fmt.Errorf("%w: no plugin host", ErrConfig)
	}
	if pin := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(pin)), "sha256:"); pin != "" && pin != g.Digest {
		err := fmt.Errorf("server: slot %s: sha256 %s, pinned %s: %w", g.Slot, g.Digest, pin, host.ErrDigestMismatch)
		s.record(ctx, GenerationRecord{Slot: g.Slot, Event: GenerationRefused, Digest: g.Digest, Origin: g.Origin, File: g.File, Reason: err.Error()})
		s.log.Warn("plugin candidate refused", "slot", g.Slot, "file", g.File, "digest", g.Digest, "origin", g.Origin, "err", err)
		return c, false, err
	}
	now := s.opt.Now().UTC()
	g.Instance, g.Time = s.opt.Instance, now
	c, added, err = s.pluginsOf().control.ProposeSlotGeneration(ctx, store.SlotCandidate{SlotGeneration: g, Deadline: now.Add(s.prepareDeadline())}, module)
	if err != nil {
		return c, false, fmt.Errorf("server: candidate of %s: %w", g.Slot, err)
	}
	if added {
		s.log.Info("slot candidate proposed", "slot", c.Slot, "generation", c.Number, "digest", c.Digest, "origin", c.Origin, "deadline", c.Deadline)
		s.advance(context.WithoutCancel(ctx), c)
	}
	return c, added, nil
}

func (s *Server) prepareDeadline() time.Duration {
	if s.opt.PrepareDeadline > 0 {
		return s.opt.PrepareDeadline
	}
	return DefaultPrepareDeadline
}

// advance takes this instance's part in a candidate being prepared: it
// prepares it in the background unless it answered already, and decides
// it once every live instance has it ready, or this one refused it, or its
// deadline passed.
func (s *Server) advance(ctx context.Context, c store.SlotCandidate) {
	s.startPrepare(c)
	s.decide(ctx, c)
}

// startPrepare prepares c in the background, off the request path and the
// follow loop, unless this instance answered it or is preparing it.
func (s *Server) startPrepare(c store.SlotCandidate) {
	ps := s.pluginsOf()
	s.installMu.Lock()
	defer s.installMu.Unlock()
	if a := ps.applied[c.Slot]; a != nil && (a.refused == c.Number || a.prepared == c.Number || a.number >= c.Number) {
		return
	}
	if ps.preparing[c.Slot] == c.Number || ps.prepCtx.Err() != nil {
		return
	}
	ps.preparing[c.Slot] = c.Number
	ps.prepWG.Add(1)
	go func() {
		defer ps.prepWG.Done()
		s.prepare(ps.prepCtx, c)
	}()
}

// prepare loads and checks a candidate as an install would (compile,
// config, start, fit to the slot, load check, self-test) without making
// it serve, holds it ready, and reports ready or refused in the store. A
// refusal refuses the candidate for every instance.
func (s *Server) prepare(ctx context.Context, c store.SlotCandidate) {
	ps := s.pluginsOf()
	forget := func() {
		s.installMu.Lock()
		if ps.preparing[c.Slot] == c.Number {
			delete(ps.preparing, c.Slot)
		}
		s.installMu.Unlock()
	}
	module, err := ps.control.SlotModule(ctx, c.Digest)
	if err != nil {
		forget() // tried again at the next sync
		s.log.Error("slot candidate not read from the store", "slot", c.Slot, "generation", c.Number, "err", err)
		return
	}
	src := host.Source{Name: c.Slot, Bytes: module, SHA256: c.Digest}
	if c.File != "" {
		src.Name = c.File // its errors name the file it came from
	}
	p, err := s.check(ctx, c.Slot, src, c.Config)
	if ctx.Err() != nil {
		// The server is closing: its answer would say nothing of the
		// candidate.
		if p != nil {
			_ = p.Close(context.WithoutCancel(ctx))
		}
		forget()
		return
	}
	s.installMu.Lock()
	if ps.preparing[c.Slot] != c.Number {
		s.installMu.Unlock() // a later candidate superseded it meanwhile
		if p != nil {
			_ = p.Close(ctx)
		}
		return
	}
	delete(ps.preparing, c.Slot)
	a := ps.appliedOf(c.Slot)
	if err != nil {
		a.refused, a.reason = c.Number, err.Error()
		a.code, a.message = refusal(err)
		s.reportSlot(c.Slot, a)
		s.installMu.Unlock()
		s.record(ctx, GenerationRecord{Slot: c.Slot, Event: GenerationRefused, Digest: c.Digest, Origin: c.Origin, File: c.File, Reason: err.Error()})
		s.log.Warn("plugin candidate refused", "slot", c.Slot, "file", c.File, "generation", c.Number, "digest", c.Digest, "origin", c.Origin, "err", err)
		s.decide(ctx, c)
		return
	}
	if old := ps.prepared[c.Slot]; old != nil {
		_ = old.p.Close(ctx)
	}
	ps.prepared[c.Slot] = &preparedCandidate{number: c.Number, p: p, src: src}
	a.prepared = c.Number
	s.reportSlot(c.Slot, a)
	s.installMu.Unlock()
	s.log.Info("slot candidate prepared", "slot", c.Slot, "generation", c.Number, "ref", p.Ref(), "digest", c.Digest)
	s.decide(ctx, c)
}

// check loads a candidate of a slot and runs every check a swap runs,
// without the swap: a plugin that passes is returned, loaded (its module
// compiled), for the caller to close.
func (s *Server) check(ctx context.Context, name string, src host.Source, config json.RawMessage) (*host.Plugin, error) {
	p, err := s.opt.Host.Load(ctx, src, s.slotPolicy(name, config))
	if err != nil {
		return nil, fmt.Errorf("server: slot %s: candidate: %w", name, err)
	}
	s.slotMu.Lock()
	sl, exists := s.slots[name]
	s.slotMu.Unlock()
	if exists {
		om, nm := sl.Plugin().Manifest(), p.Manifest()
		if om.Name != nm.Name || om.Role != nm.Role || !samePhases(om.Phases, nm.Phases) {
			_ = p.Close(ctx)
			return nil, fmt.Errorf("server: slot %s: %s %s %v replacing %s %s %v: %w",
				name, nm.Name, nm.Role, nm.Phases, om.Name, om.Role, om.Phases, host.ErrIncompatible)
		}
	}
	if err := p.LoadCheck(ctx); err != nil {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("server: slot %s: candidate: %w", name, err)
	}
	if err := s.slotTest(name)(ctx, p); err != nil {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("server: slot %s: self-test of %s: %w", name, p.Ref(), err)
	}
	return p, nil
}

// decide decides a candidate being prepared: refused when this instance
// refused it (another live instance's refusal is decided there, with its
// answer), or when a live instance had not answered by its deadline; the
// desired generation when every live instance holds it ready (this one
// included: the instance that decides takes its plugin's name@version
// from what it holds), whereupon this instance serves it. An instance
// whose lease ran out is not waited for.
func (s *Server) decide(ctx context.Context, c store.SlotCandidate) {
	ps := s.pluginsOf()
	live, err := s.liveInstances(ctx)
	if err != nil {
		s.log.Warn("slot candidate not decided", "slot", c.Slot, "generation", c.Number, "err", err)
		return
	}
	sts, err := ps.control.SlotStatuses(ctx, c.Slot)
	if err != nil {
		s.log.Warn("slot candidate not decided", "slot", c.Slot, "generation", c.Number, "err", err)
		return
	}
	me := s.instanceName()
	s.installMu.Lock()
	var mine appliedSlot
	if a := ps.applied[c.Slot]; a != nil {
		mine = *a
	}
	s.installMu.Unlock()
	if mine.refused == c.Number {
		// Refused here: this instance decides it, with its own answer
		// (again, after a store error).
		s.decideRefused(ctx, c, me, mine.code, mine.message)
		return
	}
	var pending []string
	for _, id := range live {
		i := slices.IndexFunc(sts, func(st store.SlotStatus) bool { return st.Instance == id })
		switch {
		case i >= 0 && sts[i].Refused == c.Number:
			return // refused there: that instance decides it, with its answer
		case i >= 0 && (sts[i].Prepared == c.Number || sts[i].Serving >= c.Number):
		default:
			pending = append(pending, id)
		}
	}
	now := s.opt.Now().UTC()
	if len(pending) > 0 {
		if now.After(c.Deadline) {
			s.decideRefused(ctx, c, "", CodePrepareTimeout, fmt.Sprintf("%s did not prepare it by its deadline (%s, %s after the install)",
				strings.Join(pending, ", "), c.Deadline.Format(time.RFC3339), c.Deadline.Sub(c.Time).Round(time.Second)))
		}
		return
	}
	s.installMu.Lock()
	pc := ps.prepared[c.Slot]
	s.installMu.Unlock()
	if pc == nil || pc.number != c.Number {
		return // another live instance decides it
	}
	got, decided, err := ps.control.DecideSlotCandidate(ctx, c.Slot, c.Number, store.SlotDecision{State: store.CandidateDesired, Ref: pc.p.Ref(), Time: now})
	if err != nil {
		s.log.Warn("slot candidate not decided", "slot", c.Slot, "generation", c.Number, "err", err)
		return
	}
	if decided {
		s.log.Info("slot candidate ready on every live instance: it is the desired generation", "slot", c.Slot, "generation", c.Number, "instances", live)
	}
	if got.State == store.CandidateDesired {
		s.applyDesired(ctx, got.SlotGeneration)
	}
}

// decideRefused refuses a candidate for every instance: none serves it,
// and the desired generation stays.
func (s *Server) decideRefused(ctx context.Context, c store.SlotCandidate, by, code, reason string) {
	_, decided, err := s.pluginsOf().control.DecideSlotCandidate(ctx, c.Slot, c.Number,
		store.SlotDecision{State: store.CandidateRefused, By: by, Code: code, Reason: reason, Time: s.opt.Now().UTC()})
	if err != nil {
		s.log.Warn("slot candidate not decided", "slot", c.Slot, "generation", c.Number, "err", err)
		return
	}
	if decided {
		s.log.Warn("slot candidate refused: no instance serves it", "slot", c.Slot, "generation", c.Number, "by", by, "reason", reason)
	}
	s.dropPrepared(nil)
}

// dropPrepared closes the prepared candidates that are no longer being
// prepared (pending lists those that are; nil: read them) nor desired
// and waiting for their swap.
func (s *Server) dropPrepared(pending []store.SlotCandidate) {
	ps := s.pluginsOf()
	if pending == nil {
		var err error
		if pending, err = ps.control.PendingSlotCandidates(context.Background()); err != nil {
			return
		}
	}
	desired, err := ps.control.DesiredSlots(context.Background())
	if err != nil {
		return
	}
	s.installMu.Lock()
	defer s.installMu.Unlock()
	for name, pc := range ps.prepared {
		keep := slices.ContainsFunc(pending, func(c store.SlotCandidate) bool { return c.Slot == name && c.Number == pc.number }) ||
			slices.ContainsFunc(desired, func(d store.SlotGeneration) bool { return d.Slot == name && d.Number == pc.number })
		if a := ps.applied[name]; !keep || (a != nil && a.number >= pc.number) {
			_ = pc.p.Close(context.Background())
			delete(ps.prepared, name)
		}
	}
}

// stopPreparing ends the preparations in flight and closes what was
// prepared (Close).
func (s *Server) stopPreparing() {
	ps := s.pluginsOf()
	ps.prepCancel()
	ps.prepWG.Wait()
	s.installMu.Lock()
	defer s.installMu.Unlock()
	for name, pc := range ps.prepared {
		_ = pc.p.Close(context.Background())
		delete(ps.prepared, name)
	}
}

// Follow keeps this instance serving the slots' desired generations until
// ctx ends: at once on a change notice (PostgreSQL's LISTEN/NOTIFY), and
// every SlotPoll in any case. It blocks; run it after LoadPlugins.
func (s *Server) Follow(ctx context.Context) {
	changes := s.pluginsOf().control.SlotChanges(ctx)
	t := time.NewTicker(SlotPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changes:
		}
		if err := s.SyncSlots(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("slots not synchronised with the store", "err", err)
		}
	}
}

// errNotKept: a rollback to a generation the store no longer keeps.
var errNotKept = errors.New("generation not kept")

// rollback proposes a kept generation of a slot (to; 0: the one before
// the desired one) as the slot's next candidate; every live instance
// prepares it (its module is kept, and most likely compiled still) as any
// other, and serves it once every one has it ready.
func (s *Server) rollback(ctx context.Context, name string, to uint64) (store.SlotCandidate, error) {
	ps := s.pluginsOf()
	gens, err := ps.control.SlotGenerations(ctx, name)
	if err != nil {
		return store.SlotCandidate{}, fmt.Errorf("server: rollback of %s: %w", name, err)
	}
	if len(gens) == 0 {
		return store.SlotCandidate{}, fmt.Errorf("server: slot %s: %w", name, host.ErrNoPrevious)
	}
	desired := gens[len(gens)-1]
	if to == 0 {
		if len(gens) < 2 {
			return store.SlotCandidate{}, fmt.Errorf("server: slot %s: %w", name, host.ErrNoPrevious)
		}
		to = gens[len(gens)-2].Number
	}
	i := slices.IndexFunc(gens, func(g store.SlotGeneration) bool { return g.Number == to })
	if i < 0 {
		return store.SlotCandidate{}, fmt.Errorf("server: slot %s: generation %d: %w (kept: %d to %d)", name, to, errNotKept, gens[0].Number, desired.Number)
	}
	target := gens[i]
	c, _, err := s.propose(ctx, store.SlotGeneration{Slot: name, Digest: target.Digest, Config: target.Config, Ref: target.Ref,
		Origin: store.SlotOriginRollback, From: target.Number}, nil, "")
	if err != nil {
		return store.SlotCandidate{}, fmt.Errorf("server: rollback of %s to %d: %w", name, to, err)
	}
	return c, nil
}

// rollbackError answers a refused rollback.
func rollbackError(err error) error {
	switch {
	case errors.Is(err, host.ErrNoPrevious):
		return fail(http.StatusConflict, CodeNoPrevious, "the slot has no previous generation")
	case errors.Is(err, errNotKept):
		return fail(http.StatusNotFound, CodeGenerationNotFound, err.Error())
	}
	return candidateError(err)
}

// nextNumber is the number a generation takes on this instance, so that
// a generation has one number on every instance: the store's own for a
// desired generation (from: it, whatever its origin); for one loaded at
// start, the desired one's when they are the same, else 0 (the slot's own
// next number: the store's desired generation replaces it, SyncSlots).
func (s *Server) nextNumber(ctx context.Context, name, digest string, config json.RawMessage, origin string, from uint64) uint64 {
	if origin != OriginStart {
		return from
	}
	gens, err := s.pluginsOf().control.SlotGenerations(ctx, name)
	if err != nil || len(gens) == 0 {
		return 0
	}
	if d := gens[len(gens)-1]; d.Digest == digest && store.SameConfig(d.Config, config) {
		return d.Number
	}
	return 0
}

// Rollout states.
const (
	// RolloutPreparing: the live instances prepare the candidate; none
	// serves it yet.
	RolloutPreparing = store.CandidatePreparing
	// RolloutRefused: an instance refused it, or one did not answer by
	// its deadline; none serves it, the desired generation stays.
	RolloutRefused = store.CandidateRefused
	// RolloutSuperseded: a later install replaced it before every live
	// instance had it ready; none serves it.
	RolloutSuperseded = store.CandidateSuperseded
	// RolloutSwapping: it is the desired generation; some live instances
	// do not serve it yet (they swap to it at their next sync), or one
	// that came after it was decided refused it (Refused).
	RolloutSwapping = "swapping"
	// RolloutDone: every live instance serves it (or a later one).
	RolloutDone = "done"
)

// Rollout is how far a slot's generation has reached the live instances
// (those holding a lease): prepared by some (preparing), then served by
// every one (done), or refused by one (refused), with who and why.
type Rollout struct {
	// ID names the rollout: the slot and its store generation.
	ID         string `json:"id"`
	Generation uint64 `json:"generation"`
	// State is one of the Rollout constants; Done says it is RolloutDone.
	State string `json:"state"`
	Done  bool   `json:"done"`
	// Pending are the live instances that have not answered yet (while
	// preparing), or do not serve it yet (swapping); Ready those that
	// hold it ready (while preparing).
	Pending []string `json:"pending"`
	Ready   []string `json:"ready"`
	// Refused are the reports of the instances that refused it.
	Refused []store.SlotStatus `json:"refused"`
	// By is the instance whose refusal refused it ("" when one did not
	// answer by the deadline), Code the error code of the refusal; Reason
	// says why it was refused or superseded.
	By     string `json:"by,omitempty"`
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Deadline is when a live instance that has not answered refuses it.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// liveInstances lists the instances holding a lease on the store
// (Options.Instances), this one always; this one alone without a list.
func (s *Server) liveInstances(ctx context.Context) ([]string, error) {
	live := []string{s.instanceName()}
	if s.opt.Instances != nil {
		list, err := s.opt.Instances(ctx)
		if err != nil {
			return nil, fmt.Errorf("server: live instances: %w", err)
		}
		now := s.opt.Now()
		for _, in := range list {
			if !in.Self && (in.LeaseUntil == nil || !in.LeaseUntil.After(now)) {
				continue
			}
			if !slices.Contains(live, in.ID) {
				live = append(live, in.ID)
			}
		}
	}
	slices.Sort(live)
	return live, nil
}

// rollout reports store generation n of a slot on the live instances: a
// candidate as the store decided it, and what each live instance
// reported. An instance that serves a later generation is past it.
func (s *Server) rollout(ctx context.Context, name string, n uint64) (Rollout, error) {
	ro := Rollout{ID: fmt.Sprintf("%s@%d", name, n), Generation: n, State: RolloutSwapping, Pending: []string{}, Ready: []string{}, Refused: []store.SlotStatus{}}
	ps := s.pluginsOf()
	cands, err := ps.control.SlotCandidates(ctx, name)
	if err != nil {
		return ro, fmt.Errorf("server: rollout of %s: %w", ro.ID, err)
	}
	if i := slices.IndexFunc(cands, func(c store.SlotCandidate) bool { return c.Number == n }); i >= 0 {
		c := cands[i]
		if c.State != store.CandidateDesired {
			ro.State = c.State
		}
		ro.By, ro.Code, ro.Reason = c.By, c.Code, c.Reason
		if c.State == store.CandidatePreparing {
			d := c.Deadline
			ro.Deadline = &d
		}
	}
	live, err := s.liveInstances(ctx)
	if err != nil {
		return ro, fmt.Errorf("server: rollout of %s: %w", ro.ID, err)
	}
	sts, err := ps.control.SlotStatuses(ctx, name)
	if err != nil {
		return ro, fmt.Errorf("server: rollout of %s: %w", ro.ID, err)
	}
	for _, st := range sts {
		if st.Refused == n {
			ro.Refused = append(ro.Refused, st)
		}
	}
	refusing := 0 // live instances that refused it
	for _, id := range live {
		i := slices.IndexFunc(sts, func(st store.SlotStatus) bool { return st.Instance == id })
		switch {
		case i >= 0 && sts[i].Serving >= n:
		case i >= 0 && sts[i].Refused == n:
			refusing++
		case ro.State == RolloutPreparing && i >= 0 && sts[i].Prepared == n:
			ro.Ready = append(ro.Ready, id)
		default:
			ro.Pending = append(ro.Pending, id)
		}
	}
	// A desired generation a live instance refused (one that came after
	// it was decided) is not done: that instance serves what it served.
	if ro.State == RolloutSwapping && len(ro.Pending) == 0 && refusing == 0 {
		ro.State, ro.Done = RolloutDone, true
	}
	return ro, nil
}

// latestRollout is the rollout of a slot's newest candidate, or of its
// desired generation when it is newer (or the slot has no candidate);
// nil when the store has neither.
func (s *Server) latestRollout(ctx context.Context, name string, desired uint64) *Rollout {
	n := desired
	if cands, err := s.pluginsOf().control.SlotCandidates(ctx, name); err == nil && len(cands) > 0 {
		n = max(n, cands[len(cands)-1].Number)
	}
	if n == 0 {
		return nil
	}
	ro, err := s.rollout(ctx, name, n)
	if err != nil {
		s.log.Error("slot rollout not read", "slot", name, "err", err)
		return nil
	}
	return &ro
}

// answerRollout answers an install or rollback that recorded (or found)
// store generation n of a slot, after waitRollout. A refused or
// superseded candidate is an error naming who refused it and why; one not
// done yet answers 202 with its rollout; a done one 200 (201 when the
// slot is new here).
func (s *Server) answerRollout(w http.ResponseWriter, r *http.Request, name string, n uint64, created bool, wait waitFor) error {
	_, given := r.URL.Query()["wait"]
	ro, err := s.waitRollout(r.Context(), name, n, given, wait.d)
	if err != nil {
		return err
	}
	if ro.State == RolloutRefused || ro.State == RolloutSuperseded {
		return rolloutError(ro)
	}
	s.slotMu.Lock()
	sl := s.slots[name]
	s.slotMu.Unlock()
	in := s.slotInfo(r.Context(), name, sl)
	in.Rollout = &ro
	status := http.StatusOK
	switch {
	case !ro.Done:
		status = http.StatusAccepted
	case created:
		status = http.StatusCreated
	}
	writeJSON(w, status, in)
	return nil
}

// waitRollout waits on store generation n of a slot: with given, until
// every live instance serves it, or it is refused or superseded, or d has
// passed; without, until this instance has answered it and what is left
// is up to the others (it serves it, or holds it ready while another live
// instance has not answered), bounded by the prepare deadline.
func (s *Server) waitRollout(ctx context.Context, name string, n uint64, given bool, d time.Duration) (Rollout, error) {
	if !given {
		d = s.prepareDeadline() + 5*time.Second
	}
	deadline := time.Now().Add(d)
	me := s.instanceName()
	for {
		ro, err := s.rollout(ctx, name, n)
		if err != nil {
			return ro, err
		}
		if ro.State == RolloutRefused || ro.State == RolloutSuperseded || ro.Done || !time.Now().Before(deadline) || ctx.Err() != nil ||
			ro.State == RolloutSwapping && len(ro.Pending) == 0 {
			return ro, nil // (the last: desired, and refused by a live instance)
		}
		if !given && !slices.Contains(ro.Pending, me) && (ro.State != RolloutPreparing || len(ro.Pending) > 0) {
			return ro, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rolloutError answers a refused or superseded candidate.
func rolloutError(ro Rollout) error {
	if ro.State == RolloutSuperseded {
		return fail(http.StatusConflict, CodeRolloutSuperseded, fmt.Sprintf("%s was %s before every live instance had it ready; no instance serves it", ro.ID, ro.Reason))
	}
	if ro.By == "" {
		return fail(http.StatusConflict, CodePrepareTimeout, fmt.Sprintf("%s refused: %s; no instance serves it, the desired generation stays", ro.ID, ro.Reason))
	}
	status := http.StatusUnprocessableEntity
	switch ro.Code {
	case CodeCapabilityNotGranted:
		status = http.StatusForbidden
	case CodeBodyTooLarge:
		status = http.StatusRequestEntityTooLarge
	}
	return fail(status, ro.Code, fmt.Sprintf("%s refused by %s: %s; no instance serves it, the desired generation stays", ro.ID, ro.By, ro.Reason))
}
