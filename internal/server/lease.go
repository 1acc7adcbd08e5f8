package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

// lookup returns the tenant's session, opened on this instance; a foreign
// one is not found.
func (s *Server) lookup(ctx context.Context, tenant, id string) (*session, error) {
	return s.acquire(ctx, tenant, id)
}

// acquire returns the session this instance holds, or claims it in the
// directory and opens it: a session whose owner is alive elsewhere is
// refused with CodeSessionElsewhere; one whose owner died (or released
// it) moves here, and opening it recovers what the dead process left.
//
// While leases are kept (after Start) the directory is asked on every
// request, even for a session held here: another instance may have taken
// it over while this one's lease had run out.
func (s *Server) acquire(ctx context.Context, tenant, id string) (*session, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss != nil && ss.tenant != tenant {
		return nil, errSessionNotFound
	}
	leased := s.leaseUntil.Load() != 0
	if ss != nil && !leased {
		ss.used.Store(s.opt.Now().UnixNano())
		return ss, nil
	}
	if leased && !s.holding() {
		// This instance's own lease ran out (the store was unreachable):
		// renew it before claiming anything.
		if err := s.beat(ctx); err != nil {
			s.log.Error("lease not renewed", "instance", s.opt.Instance, "err", err)
			return nil, fail(http.StatusServiceUnavailable, CodeInternal, "the instance lost its lease on the session store")
		}
		s.mu.Lock()
		ss = s.sessions[id]
		s.mu.Unlock()
	}
	if ss != nil {
		prev, err := s.dir.Claim(ctx, id, s.opt.Instance, s.opt.Now())
		switch {
		case err == nil && prev == s.opt.Instance:
			ss.used.Store(s.opt.Now().UnixNano())
			return ss, nil
		case errors.Is(err, store.ErrOwned):
			s.forget(ss)
			return nil, elsewhere(prev)
		case err != nil:
			s.log.Error("session claim failed", "session", id, "err", err)
			return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
		}
		// Another instance held the session since this one opened it: the
		// copy here is stale. It is opened again once nothing runs on it.
		if !ss.run.TryLock() {
			return nil, errSessionBusy
		}
		s.forget(ss)
		ss.run.Unlock()
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	s.mu.Lock()
	opened := s.sessions[id]
	s.mu.Unlock()
	if opened != nil {
		// Opened by another request meanwhile.
		opened.used.Store(s.opt.Now().UnixNano())
		return opened, nil
	}
	rec, err := s.dir.LookupSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.Tenant != tenant) {
		return nil, errSessionNotFound
	}
	if err != nil {
		s.log.Error("session lookup failed", "session", id, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	prev, err := s.dir.Claim(ctx, id, s.opt.Instance, s.opt.Now())
	if errors.Is(err, store.ErrOwned) {
		return nil, elsewhere(prev)
	}
	if err != nil {
		s.log.Error("session claim failed", "session", id, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the session store failed")
	}
	ss, err = s.open(ctx, rec)
	if err != nil {
		s.log.Error("session open failed", "session", id, "tenant", tenant, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeSetupFailed, "the session could not be opened")
	}
	if prev != s.opt.Instance {
		s.log.Info("session taken over", "session", id, "from", prev, "instance", s.opt.Instance)
	}
	ss.used.Store(s.opt.Now().UnixNano())
	s.mu.Lock()
	s.sessions[id] = ss
	s.mu.Unlock()
	return ss, nil
}

func elsewhere(owner string) error {
	return &ownedError{fail(http.StatusConflict, CodeSessionElsewhere, fmt.Sprintf("the session is served by instance %s; send its requests there", owner)), owner}
}

// forget drops a session from this instance: no new run starts on it.
func (s *Server) forget(ss *session) {
	ss.closed.Store(true)
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
}

// forgetIdle drops every session held here that runs nothing, after this
// instance's lease ran out: another instance may own them now, and the
// next request opens them again only once the directory says so.
func (s *Server) forgetIdle() {
	s.mu.Lock()
	var all []*session
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		if ss.run.TryLock() {
			s.forget(ss)
			ss.run.Unlock()
		}
	}
}

// closeIdle closes the sessions no request used for IdleTimeout, that run
// nothing and stream to nobody: their state is in the directory, and their
// next request opens them again. It returns how many it closed.
func (s *Server) closeIdle() int {
	if s.opt.IdleTimeout <= 0 {
		return 0
	}
	cutoff := s.opt.Now().Add(-s.opt.IdleTimeout).UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, ss := range s.sessions {
		if ss.used.Load() > cutoff || ss.streams.Load() > 0 || !ss.run.TryLock() {
			continue
		}
		delete(s.sessions, id)
		ss.closed.Store(true)
		ss.run.Unlock()
		n++
	}
	return n
}
