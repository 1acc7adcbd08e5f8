package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentwarden/warden/internal/chain"
)

// Limits bound what one tenant may take of an instance, so that one tenant
// cannot starve the others. Every limit is per tenant and per instance (an
// instance does not see the requests another one serves). In Options a zero
// field is no limit; DefaultLimits are what `warden serve` applies unless
// configured otherwise.
type Limits struct {
	// Rate is the tenant's sustained rate of API requests per second, and
	// Burst how many it may send at once above it (a token bucket): a
	// request beyond them is answered 429 tenant_rate_limited with the
	// Retry-After of the next token. Rate 0 is no limit; Burst 0 with a
	// Rate means a burst of one.
	Rate  float64
	Burst int
	// MaxSessions bounds the tenant's sessions open on this instance: one
	// more POST /v1/sessions is answered 429 tenant_session_limit. A
	// session opened again from the store (after a restart, or taken over)
	// is never refused, so a tenant always reaches its own sessions. With a
	// durable store an idle session closes after IdleTimeout, and
	// Retry-After is when the next one will; without one (memory) sessions
	// are kept until the process ends and no Retry-After is sent.
	MaxSessions int
	// MaxRuns bounds the tenant's runs in flight: messages, follow-up
	// answers, verifications, approval decisions and resumes. One more is
	// answered 429 tenant_run_limit with Retry-After: 1.
	MaxRuns int
	// MaxToolCalls bounds the tenant's business tool calls in flight across
	// its sessions. A call beyond it waits for a slot within its own
	// timeout (nine tenths of it); one that gets none is never sent and
	// fails as TOOL_UNREACHABLE.
	MaxToolCalls int
}

// DefaultLimits are the limits `warden serve` applies by default.
func DefaultLimits() Limits {
	return Limits{Rate: 10, Burst: 20, MaxSessions: 100, MaxRuns: 4, MaxToolCalls: 8}
}

func (l Limits) validate() error {
	switch {
	case l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		return fmt.Errorf("%w: limits: rate %v is not a finite non-negative number", ErrConfig, l.Rate)
	case l.Burst < 0 || l.MaxSessions < 0 || l.MaxRuns < 0 || l.MaxToolCalls < 0:
		return fmt.Errorf("%w: limits: a negative limit", ErrConfig)
	}
	return nil
}

// runRetryAfter is the Retry-After of a run refused by MaxRuns: when a run
// ends is not known, and a second is short enough for a client's retry to
// find the slot soon and long enough not to spin.
const runRetryAfter = time.Second

// tenantUse is what one tenant is using now.
type tenantUse struct {
	bucket *rate.Limiter // nil: no rate limit
	// runs and creating (sessions being created) are guarded by limiter.mu.
	runs, creating int
	// slots holds one token per tool call in flight; nil: no limit.
	slots chan struct{}
}

// limiter keeps every tenant's use. Tenants are the ones of Options.Keys,
// known at New, so the map never grows.
type limiter struct {
	lim     Limits
	mu      sync.Mutex
	tenants map[string]*tenantUse
}

func newLimiter(lim Limits, tenants map[string]string) *limiter {
	l := &limiter{lim: lim, tenants: map[string]*tenantUse{}}
	for _, t := range tenants {
		if l.tenants[t] != nil {
			continue
		}
		u := &tenantUse{}
		if lim.Rate > 0 {
			u.bucket = rate.NewLimiter(rate.Limit(lim.Rate), max(lim.Burst, 1))
		}
		if lim.MaxToolCalls > 0 {
			u.slots = make(chan struct{}, lim.MaxToolCalls)
		}
		l.tenants[t] = u
	}
	return l
}

// allow takes one token of the tenant's bucket at now, or says how long
// until one is there.
func (l *limiter) allow(tenant string, now time.Time) (time.Duration, bool) {
	u := l.tenants[tenant]
	if u == nil || u.bucket == nil {
		return 0, true
	}
	r := u.bucket.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// startRun takes a run slot of the tenant; release gives it back.
func (l *limiter) startRun(tenant string) (release func(), ok bool) {
	u := l.tenants[tenant]
	if u == nil || l.lim.MaxRuns == 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.runs >= l.lim.MaxRuns {
		return nil, false
	}
	u.runs++
	return func() {
		l.mu.Lock()
		u.runs--
		l.mu.Unlock()
	}, true
}

// limited wraps a handler that runs the tenant's loop in its run limit.
func (s *Server) limited(h tenantHandler) tenantHandler {
	return func(w http.ResponseWriter, r *http.Request, tenant string) error {
		release, ok := s.limits.startRun(tenant)
		if !ok {
			setRetryAfter(w, runRetryAfter)
			return fail(http.StatusTooManyRequests, CodeTenantRunLimit,
				fmt.Sprintf("the tenant has %d runs in flight, the most it may have; retry when one ends", s.opt.Limits.MaxRuns))
		}
		// A run that outlives the request (launch) takes the slot over.
		slot := &runSlot{release: release}
		defer func() {
			if !slot.taken {
				release()
			}
		}()
		return h(w, r.WithContext(context.WithValue(r.Context(), runSlotKey{}, slot)), tenant)
	}
}

// startSession reserves room for one new session of the tenant; done
// gives the reservation back once the session is registered (or failed).
func (s *Server) startSession(w http.ResponseWriter, tenant string) (done func(), err error) {
	u := s.limits.tenants[tenant]
	max := s.opt.Limits.MaxSessions
	if u == nil || max == 0 {
		return func() {}, nil
	}
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	open, next := s.openSessions(tenant)
	if open+u.creating >= max {
		msg := fmt.Sprintf("the tenant has %d sessions open, the most it may have", max)
		if next > 0 {
			setRetryAfter(w, next)
			msg += "; an idle one closes in time"
		} else {
			msg += "; sessions are kept until the service restarts"
		}
		return nil, fail(http.StatusTooManyRequests, CodeTenantSessionLimit, msg)
	}
	u.creating++
	return func() {
		s.limits.mu.Lock()
		u.creating--
		s.limits.mu.Unlock()
	}, nil
}

// openSessions counts the tenant's sessions open here and, when idle
// sessions close (IdleTimeout), how long until the first of them may: the
// least recently used one that streams to nobody. next is 0 when none will.
func (s *Server) openSessions(tenant string) (open int, next time.Duration) {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		if ss.tenant != tenant {
			continue
		}
		open++
		if s.opt.IdleTimeout <= 0 || ss.streams.Load() > 0 {
			continue
		}
		d := time.Unix(0, ss.used.Load()).Add(s.opt.IdleTimeout).Sub(now)
		if d < time.Second {
			d = time.Second
		}
		if next == 0 || d < next {
			next = d
		}
	}
	return open, next
}

// caller is the business tool caller of the tenant's sessions: within its
// MaxToolCalls.
func (s *Server) caller(tenant string) chain.Caller {
	u := s.limits.tenants[tenant]
	if u == nil || u.slots == nil {
		return s.opt.Tools
	}
	return &limitedCaller{Caller: s.opt.Tools, tenant: tenant, slots: u.slots}
}

// limitedCaller calls tools within the tenant's slots. It keeps the
// underlying caller's per-tool timeouts.
type limitedCaller struct {
	chain.Caller
	tenant string
	slots  chan struct{}
}

// CallTool waits for a slot, then calls. The wait ends a tenth of the
// attempt's time before its deadline, so that a call that never got a slot
// fails as not sent (TOOL_UNREACHABLE; a read retries) rather than as a
// timeout, which would leave a write uncertain.
func (c *limitedCaller) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	wait := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
		defer cancel()
	}
	select {
	case c.slots <- struct{}{}:
	case <-wait.Done():
		return chain.Response{}, fmt.Errorf("server: tenant %s has %d tool calls in flight, the most it may have; %s was not sent: %w",
			c.tenant, cap(c.slots), name, chain.ErrUnreachable)
	}
	defer func() { <-c.slots }()
	return c.Caller.CallTool(ctx, name, args)
}

// ToolTimeout passes on the underlying caller's per-tool timeout.
func (c *limitedCaller) ToolTimeout(tool string) time.Duration {
	if tt, ok := c.Caller.(chain.ToolTimeouts); ok {
		return tt.ToolTimeout(tool)
	}
	return 0
}
