package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
}

// instanceName names this instance in the slots' rollout status.
func (s *Server) instanceName() string {
	if s.opt.Instance != "" {
		return s.opt.Instance
	}
	return "local"
}

// publish writes a generation this instance made serve to the store as
// the slot's desired generation, so every instance sharing the store
// serves it. A generation loaded from the plugin directory at start
// becomes generation 1 only of a slot the store has none of; otherwise
// the store's desired generation is served (SyncSlots). installMu is held.
func (s *Server) publish(ctx context.Context, name string, module []byte, config json.RawMessage, info host.GenerationInfo, origin, file string, from uint64) {
	ps := s.pluginsOf()
	g := store.SlotGeneration{Slot: name, Digest: info.Digest, Config: config, Ref: info.Ref, Origin: origin, File: file,
		Instance: s.opt.Instance, From: from, Time: s.opt.Now().UTC()}
	if origin == OriginRollback {
		module = nil // the store holds it: it is a kept generation's
	}
	got, _, err := ps.control.PutSlotGeneration(context.WithoutCancel(ctx), g, module, origin == OriginStart)
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
	ps := s.pluginsOf()
	a := ps.applied[name]
	if a == nil {
		a = &appliedSlot{}
		ps.applied[name] = a
	}
	a.number, a.digest, a.config, a.since = g.Number, g.Digest, g.Config, since
	s.reportSlot(name, a)
}

// reportSlot writes what this instance serves of a slot to the store.
func (s *Server) reportSlot(name string, a *appliedSlot) {
	st := store.SlotStatus{Slot: name, Instance: s.instanceName(), Serving: a.number, Digest: a.digest, Since: a.since,
		Refused: a.refused, Reason: a.reason, Updated: s.opt.Now().UTC()}
	if err := s.pluginsOf().control.ReportSlot(context.Background(), st); err != nil {
		s.log.Error("slot status not reported", "slot", name, "err", err)
	}
}

// SyncSlots makes this instance serve every slot's desired generation in
// the store: a generation it does not serve yet is read from the store
// and installed with the same checks as any candidate. A generation it
// refuses is reported (and recorded) and not tried again; the slot keeps
// serving what it served. It fails only when the store cannot be read.
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
	return nil
}

// applyDesired serves a slot's desired generation d, unless it does, or
// refused it, already, or serves a later one: the store's numbers only
// grow (a rollback is a new generation), so a d read before an install
// this instance has made since is stale and is never applied over it.
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
	module, err := ps.control.SlotModule(ctx, d.Digest)
	if err != nil {
		s.log.Error("desired generation not read from the store", "slot", d.Slot, "generation", d.Number, "err", err)
		return // tried again at the next sync
	}
	src := host.Source{Name: d.Slot, Bytes: module, SHA256: d.Digest}
	if _, _, _, err := s.installLocked(ctx, d.Slot, src, d.Config, OriginStore, d.File, d.Number); err != nil {
		if a == nil {
			a = &appliedSlot{}
			ps.applied[d.Slot] = a
		}
		a.refused, a.reason = d.Number, err.Error()
		s.reportSlot(d.Slot, a)
		return
	}
	s.applied(d.Slot, d, time.Now())
	s.log.Info("slot follows the store", "slot", d.Slot, "generation", d.Number, "digest", d.Digest, "installed_by", d.Instance)
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

// rollback makes a kept generation of a slot (to; 0: the one before the
// desired one) serve again, as the slot's next generation in the store,
// after the same checks as any candidate; every instance follows.
func (s *Server) rollback(ctx context.Context, name string, to uint64) (host.GenerationInfo, error) {
	s.installMu.Lock()
	defer s.installMu.Unlock()
	ps := s.pluginsOf()
	gens, err := ps.control.SlotGenerations(ctx, name)
	if err != nil {
		return host.GenerationInfo{}, fmt.Errorf("server: rollback of %s: %w", name, err)
	}
	if len(gens) == 0 {
		return host.GenerationInfo{}, fmt.Errorf("server: slot %s: %w", name, host.ErrNoPrevious)
	}
	desired := gens[len(gens)-1]
	if to == 0 {
		if desired.Number < 2 {
			return host.GenerationInfo{}, fmt.Errorf("server: slot %s: %w", name, host.ErrNoPrevious)
		}
		to = desired.Number - 1
	}
	i := slices.IndexFunc(gens, func(g store.SlotGeneration) bool { return g.Number == to })
	if i < 0 {
		return host.GenerationInfo{}, fmt.Errorf("server: slot %s: generation %d: %w (kept: %d to %d)", name, to, errNotKept, gens[0].Number, desired.Number)
	}
	target := gens[i]
	module, err := ps.control.SlotModule(ctx, target.Digest)
	if err != nil {
		return host.GenerationInfo{}, fmt.Errorf("server: rollback of %s to %d: %w", name, to, err)
	}
	src := host.Source{Name: name, Bytes: module, SHA256: target.Digest}
	_, info, _, err := s.installLocked(ctx, name, src, target.Config, OriginRollback, "", target.Number)
	return info, err
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

// nextNumber is the number a candidate's generation takes on this
// instance, so that a generation has one number on every instance: the
// store's own for a desired generation (from: it, for OriginStore), else
// the one the store will give it, one above the desired one (0, the
// slot's own next number, when the store has it already or cannot say).
func (s *Server) nextNumber(ctx context.Context, name, digest string, config json.RawMessage, origin string, from uint64) uint64 {
	if origin == OriginStore {
		return from
	}
	gens, err := s.pluginsOf().control.SlotGenerations(ctx, name)
	if err != nil || len(gens) == 0 {
		return 0
	}
	d := gens[len(gens)-1]
	if d.Digest == digest && store.SameConfig(d.Config, config) {
		if origin == OriginStart {
			return d.Number
		}
		return 0
	}
	if origin == OriginStart {
		return 0 // the store's desired generation replaces it (SyncSlots)
	}
	return d.Number + 1
}

// Rollout is how far a slot's generation in the store has reached the
// live instances: every one serves it (Done), some do not yet (Pending),
// or some refused it (Refused, with why).
type Rollout struct {
	// ID names the rollout: the slot and its store generation.
	ID         string             `json:"id"`
	Generation uint64             `json:"generation"`
	Done       bool               `json:"done"`
	Pending    []string           `json:"pending"`
	Refused    []store.SlotStatus `json:"refused"`
}

// rollout reports generation n of a slot on the live instances: those
// holding a lease (Options.Instances), else this one alone. An instance
// that serves a later generation is past it.
func (s *Server) rollout(ctx context.Context, name string, n uint64) (Rollout, error) {
	ro := Rollout{ID: fmt.Sprintf("%s@%d", name, n), Generation: n, Pending: []string{}, Refused: []store.SlotStatus{}}
	live := []string{s.instanceName()}
	if s.opt.Instances != nil {
		list, err := s.opt.Instances(ctx)
		if err != nil {
			return ro, fmt.Errorf("server: rollout of %s: %w", ro.ID, err)
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
	sts, err := s.pluginsOf().control.SlotStatuses(ctx, name)
	if err != nil {
		return ro, fmt.Errorf("server: rollout of %s: %w", ro.ID, err)
	}
	slices.Sort(live)
	for _, id := range live {
		i := slices.IndexFunc(sts, func(st store.SlotStatus) bool { return st.Instance == id })
		switch {
		case i >= 0 && sts[i].Serving >= n:
		case i >= 0 && sts[i].Refused == n:
			ro.Refused = append(ro.Refused, sts[i])
		default:
			ro.Pending = append(ro.Pending, id)
		}
	}
	ro.Done = len(ro.Pending) == 0 && len(ro.Refused) == 0
	return ro, nil
}

// answerRollout answers an install or rollback of a slot: with the
// rollout of the generation it made serve, after waiting (?wait=) until
// every live instance serves it or one refused it. 202 when neither came
// to pass, else status.
func (s *Server) answerRollout(w http.ResponseWriter, r *http.Request, name string, sl *host.Slot, status int, wait waitFor) error {
	in := s.slotInfo(r.Context(), name, sl)
	if in.Serving == 0 {
		writeJSON(w, status, in) // not in the store (it failed, and said so in the log)
		return nil
	}
	deadline := time.Now().Add(wait.d)
	for {
		ro, err := s.rollout(r.Context(), name, in.Serving)
		if err != nil {
			return err
		}
		if !ro.Done && len(ro.Refused) == 0 && time.Now().Before(deadline) && r.Context().Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		in = s.slotInfo(r.Context(), name, sl)
		in.Rollout = &ro
		if !ro.Done && len(ro.Refused) == 0 {
			status = http.StatusAccepted
		}
		writeJSON(w, status, in)
		return nil
	}
}
