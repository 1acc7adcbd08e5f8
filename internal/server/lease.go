package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/store"
)

// Start takes this instance's lease in the directory and keeps it: it
// renews the lease every third of Options.Lease until ctx ends or Close,
// and, at once and every lease period, opens the sessions Recoverable
// lists that this instance may claim, so that a write a dead process left
// in flight is recovered (its node waits for VERIFY) without waiting for
// the session's next request. With Exclusive every other instance's lease
// ends first.
func (s *Server) Start(ctx context.Context) error {
	if err := s.beat(ctx); err != nil {
		return err
	}
	if s.opt.Exclusive {
		if err := s.dir.ReleaseOthers(ctx, s.opt.Instance); err != nil {
			return fmt.Errorf("server: start: %w", err)
		}
	}
	if err := s.Recover(ctx); err != nil {
		return err
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopBeat, s.beatDone = cancel, make(chan struct{})
	go func() {
		defer close(s.beatDone)
		tick := time.NewTicker(s.opt.Lease / 3)
		defer tick.Stop()
		last := time.Now()
		for {
			// The lease is kept until Close, not until ctx ends: runs
			// finishing during a graceful shutdown still hold it.
			select {
			case <-bctx.Done():
				return
			case <-tick.C:
			}
			if err := s.beat(bctx); err != nil {
				s.log.Error("lease not renewed", "instance", s.opt.Instance, "err", err)
				continue
			}
			if time.Since(last) >= s.opt.Lease {
				last = time.Now()
				if err := s.Recover(bctx); err != nil {
					s.log.Error("recovery sweep failed", "instance", s.opt.Instance, "err", err)
				}
				if n := s.closeIdle(); n > 0 {
					s.log.Info("idle sessions closed", "sessions", n)
				}
			}
		}
	}()
	return nil
}

// beat renews the lease. A lease that had run out before it was renewed
// may have let another instance take sessions over: the idle ones held
// here are dropped, and each is opened again only once the directory says
// this instance owns it.
func (s *Server) beat(ctx context.Context) error {
	now := s.opt.Now()
	lapsed := s.leaseUntil.Load() != 0 && now.UnixNano() >= s.leaseUntil.Load()
	until := now.Add(s.opt.Lease)
	if err := s.dir.Heartbeat(ctx, s.opt.Instance, until); err != nil {
		return fmt.Errorf("server: lease of %s: %w", s.opt.Instance, err)
	}
	s.leaseUntil.Store(until.UnixNano())
	if lapsed {
		s.log.Warn("lease had run out; idle sessions dropped", "instance", s.opt.Instance)
		s.forgetIdle()
	}
	return nil
}

// holding reports whether this instance's lease still runs: while it does
// no other instance can have claimed a session this one holds. Before
// Start no lease is kept and the instance holds what it opened.
func (s *Server) holding() bool {
	u := s.leaseUntil.Load()
	return u == 0 || s.opt.Now().UnixNano() < u
}

// Recover opens every session Options.Recoverable lists that this
// instance may claim; opening one recovers it. Sessions a live instance
// holds are left to it.
func (s *Server) Recover(ctx context.Context) error {
	if s.opt.Recoverable == nil {
		return nil
	}
	ids, err := s.opt.Recoverable(ctx)
	if err != nil {
		return fmt.Errorf("server: recover: %w", err)
	}
	for _, id := range ids {
		rec, err := s.dir.LookupSession(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			// A session the API never registered (a store used by warden
			// run, say): nothing here can open it.
			continue
		}
		if err != nil {
			return fmt.Errorf("server: recover session %s: %w", id, err)
		}
		if _, err := s.acquire(ctx, rec.Tenant, id); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && (ae.code == CodeSessionElsewhere || ae.code == CodeSessionBusy) {
				continue
			}
			// One session that cannot be opened (its agent no longer
			// loads, say) must not keep the others from recovery.
			s.log.Error("session not recovered", "session", id, "err", err)
		}
	}
	return nil
}

// release ends the lease at Close, so that another instance may take this
// one's sessions at once.
func (s *Server) release() {
	if s.stopBeat != nil {
		s.stopBeat()
		<-s.beatDone
		s.stopBeat = nil
	}
	if s.leaseUntil.Load() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.dir.Release(ctx, s.opt.Instance); err != nil {
		s.log.Warn("lease not released", "instance", s.opt.Instance, "err", err)
	}
	s.leaseUntil.Store(0)
}

// Slots returns the plugin slots serving now, by name (for metrics).
func (s *Server) Slots() map[string]*host.Slot {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	out := make(map[string]*host.Slot, len(s.slots))
	for n, sl := range s.slots {
		out[n] = sl
	}
	return out
}

// CloseIdle closes the sessions idle for IdleTimeout now (Start does it
// every lease period); it returns how many.
func (s *Server) CloseIdle() int { return s.closeIdle() }
