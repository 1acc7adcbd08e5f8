package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tetratelabs/wazero/sys"
)

// FailurePolicy says what a guard's own failure (trap, timeout, violation,
// unavailable) does to the call it guards.
type FailurePolicy string

// Failure policies. Builtins always fail as FAILED.
const (
	// FailClosed rejects the guarded call (the default).
	FailClosed FailurePolicy = "closed"
	// FailOpen lets the call pass when the guard fails, and logs it.
	FailOpen FailurePolicy = "open"
	// Shadow runs the guard and logs its verdict, but always passes.
	Shadow FailurePolicy = "shadow"
)

// DefaultLimits apply where neither the policy nor the manifest sets a limit.
var DefaultLimits = abi.Limits{
	TimeoutMs:      1000,
	MemoryPages:    1024, // 64 MiB
	MaxInputBytes:  1 << 20,
	MaxOutputBytes: 1 << 20,
}

// Policy is what the operator allows one plugin. Zero fields take defaults.
type Policy struct {
	// Limits cap what the manifest may ask for; zero fields mean DefaultLimits.
	Limits abi.Limits
	// PoolSize bounds the instances per tenant; 0 means 2.
	PoolSize int
	// MaxCallsPerInstance recycles an instance after that many calls, which
	// bounds what a leaking guest can hold; 0 means 100000.
	MaxCallsPerInstance int
	// LoadTimeout bounds the start of one instance; 0 means 10 s.
	LoadTimeout time.Duration
	// Failure applies to guards; "" means FailClosed.
	Failure FailurePolicy
	// Config is the plugin's configuration (a JSON object), checked against
	// the manifest's configSchema at load.
	Config json.RawMessage
	// Capabilities are what whoever loads the plugin grants it; nil grants
	// nothing. The manifest asking for a capability grants nothing: a
	// plugin whose manifest asks for one outside this list is refused at
	// load (a *GrantError, ErrNotGranted). The plugin gets what it asked
	// for within the grant, and no more: the state views sent, the effects
	// taken, the real clock and randomness.
	Capabilities []abi.Capability

	// verifyOnly skips the config check (Verify: a module installed before
	// anyone configures it).
	verifyOnly bool
	// grantAsked grants what the manifest asks for (Inspect, which reads
	// the manifest on a throwaway host and calls no handler).
	grantAsked bool
}

func (p Policy) withDefaults() Policy {
	if p.Limits.TimeoutMs == 0 {
		p.Limits.TimeoutMs = DefaultLimits.TimeoutMs
	}
	if p.Limits.MemoryPages == 0 {
		p.Limits.MemoryPages = DefaultLimits.MemoryPages
	}
	if p.Limits.MaxInputBytes == 0 {
		p.Limits.MaxInputBytes = DefaultLimits.MaxInputBytes
	}
	if p.Limits.MaxOutputBytes == 0 {
		p.Limits.MaxOutputBytes = DefaultLimits.MaxOutputBytes
	}
	if p.PoolSize == 0 {
		p.PoolSize = 2
	}
	if p.MaxCallsPerInstance == 0 {
		p.MaxCallsPerInstance = 100000
	}
	if p.LoadTimeout == 0 {
		p.LoadTimeout = 10 * time.Second
	}
	if p.Failure == "" {
		p.Failure = FailClosed
	}
	return p
}

// Plugin is a loaded, verified plugin. It is safe for concurrent use.
type Plugin struct {
	host     *Host
	ref      string // name@version
	source   string
	digest   string
	manifest abi.Manifest
	grant    []abi.Capability // what the manifest asked for, all granted
	limits   abi.Limits
	policy   Policy
	engine   engine

	// moduleDigest is the module's own digest, selects the plugin of it
	// this one serves (SelectPlugin); digest names both.
	moduleDigest string
	selects      string

	mu     sync.Mutex
	pools  map[string]*pool
	spare  *instance
	closed bool
	// refilling is set while a spare starts in the background; refills
	// counts those starts, which Close waits for.
	refilling bool
	refills   sync.WaitGroup

	live     atomic.Int64
	inflight atomic.Int64
	memHigh  atomic.Int64
	// memLive is the linear memory of the live instances; startBytes
	// that of a fresh instance, the room a start reserves.
	memLive    atomic.Int64
	startBytes atomic.Int64
	stats      counters
	// probes counts the load check's and self-tests' calls (ProbeTenant),
	// apart from the calls the plugin served.
	probes counters
	// generation is the slot generation the plugin serves as (0 outside
	// a slot), for spans and metrics.
	generation atomic.Uint64
}

// Manifest returns the plugin's manifest.
func (p *Plugin) Manifest() abi.Manifest { return p.manifest }

// Selected returns the plugin of a module serving several this one serves
// (SelectPlugin), "" for a module serving one.
func (p *Plugin) Selected() string { return p.selects }

// ModuleDigest returns the hex sha256 of the module without its binding to
// a plugin (SelectPlugin): the digest its compilation is shared by. For a
// module serving one plugin it is Digest.
func (p *Plugin) ModuleDigest() string { return p.moduleDigest }

// Grant returns the capabilities the plugin holds: what its manifest asked
// for, each granted by its Policy.
func (p *Plugin) Grant() []abi.Capability { return slices.Clone(p.grant) }

func (p *Plugin) granted(c abi.Capability) bool { return slices.Contains(p.grant, c) }

// Digest returns the hex sha256 of the module.
func (p *Plugin) Digest() string { return p.digest }

// Ref returns "name@version".
func (p *Plugin) Ref() string { return p.ref }

// Limits returns the limits in force for each call.
func (p *Plugin) Limits() abi.Limits { return p.limits }

// Loader returns "direct" or "extism".
func (p *Plugin) Loader() string { return p.engine.kind() }

func (p *Plugin) pool(tenant string) (*pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("host: %s: %w", p.ref, ErrClosed)
	}
	pl, ok := p.pools[tenant]
	if !ok {
		pl = newPool(p, tenant, p.policy.PoolSize)
		p.pools[tenant] = pl
	}
	return pl, nil
}

func (p *Plugin) takeSpare() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.spare
	p.spare = nil
	if s != nil {
		p.host.instances.busyNow(s)
	}
	return s
}

// budgetError is a start the instance budget refused.
type budgetError struct{ error }

func (e budgetError) Unwrap() error { return e.error }

func isBudget(err error) bool {
	var be budgetError
	return errors.As(err, &be)
}

// startInstance starts an instance within the host's instance budget: room
// for it is reserved first (idle instances are closed for it, unless
// deadline is zero: then it starts only in free room), waiting for busy
// ones until deadline if wait says so. A refusal is a budgetError
// wrapping ErrUnavailable.
func (p *Plugin) startInstance(ctx context.Context, deadline time.Time, wait bool) (*instance, error) {
	b := p.host.instances
	est := p.startBytes.Load()
	if _, err := b.reserve(ctx, p, est, deadline, wait, !deadline.IsZero()); err != nil {
		return nil, budgetError{err}
	}
	inst, err := p.newInstance(ctx)
	if err != nil {
		b.unreserve(est)
		return nil, err
	}
	b.started(inst, est)
	return inst, nil
}

func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	ctx, cancel := context.WithTimeout(ctx, p.policy.LoadTimeout)
	defer cancel()
	box := newSandbox(p.host)
	box.clock = p.granted(abi.CapClock)
	box.random = p.granted(abi.CapRandom)
	impl, err := p.engine.newInstance(ctx, box)
	if err != nil {
		return nil, err
	}
	p.live.Add(1)
	p.stats.created.Add(1)
	return &instance{impl: impl, box: box, p: p, st: &callState{plugin: p, rec: abi.NewGrantedRecorder(&p.manifest, p.grant, p.limits.MaxOutputBytes), box: box}}, nil
}

func (p *Plugin) closeInstance(ctx context.Context, inst *instance) {
	inst.impl.close(context.WithoutCancel(ctx))
	p.host.instances.gone(inst)
	p.live.Add(-1)
	p.stats.closed.Add(1)
	p.maybeRelease(ctx)
}

// maybeRelease frees the compiled module once the plugin is closed and its
// last instance is gone.
func (p *Plugin) maybeRelease(ctx context.Context) {
	p.mu.Lock()
	done := p.closed && p.live.Load() == 0 && p.engine != nil
	eng := p.engine
	if done {
		p.engine = releasedEngine{eng.kind()}
	}
	p.mu.Unlock()
	if done {
		_ = eng.close(context.WithoutCancel(ctx))
	}
}

// Close stops new calls. Calls in flight finish on their instances, which
// are closed as they return; the compiled module is freed after the last.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	pools := p.pools
	spare := p.spare
	p.spare = nil
	if spare != nil {
		p.host.instances.busyNow(spare)
	}
	p.mu.Unlock()
	if spare != nil {
		p.closeInstance(ctx, spare)
	}
	for _, pl := range pools {
		pl.close(ctx)
	}
	// A spare starting in the background is closed as it ends.
	p.refills.Wait()
	p.maybeRelease(ctx)
	p.host.forget(p)
	return nil
}

type releasedEngine struct{ k string }

func (r releasedEngine) kind() string { return r.k }
func (releasedEngine) newInstance(context.Context, *sandbox) (instanceImpl, error) {
	return nil, ErrClosed
}
func (releasedEngine) close(context.Context) error { return nil }

// Invoke runs one decision on a request envelope (JSON, abi.Request) and
// returns the plugin's verdict, or a *CallError when the plugin failed. It
// applies no failure policy; Guard and Builtin do.
func (p *Plugin) Invoke(ctx context.Context, tenant string, req []byte) (abi.Verdict, error) {
	return p.invoke(ctx, tenant, req, 0, nil)
}

// invoke is Invoke; index, when set, fills the index of req's members the
// host services read paths through (Envelope.MembersFor), sparing the pass
// over req that indexing it otherwise takes. The last tail bytes of req
// before its closing brace are its response member, which a lean guest
// is not given (responseTail).
func (p *Plugin) invoke(ctx context.Context, tenant string, req []byte, tail int, index func(m *services.Members)) (abi.Verdict, error) {
	start := time.Now()
	st := &p.stats
	if tenant == ProbeTenant {
		st = &p.probes
	}
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	if len(req) > p.limits.MaxInputBytes {
		st.inputTooLarge.Add(1)
		return abi.Verdict{}, &CallError{Plugin: p.ref, Code: abi.PluginInputTooLarge, Kind: ErrInputTooLarge,
			Detail: fmt.Sprint(p.limits.MaxInputBytes)}
	}
	pl, err := p.pool(tenant)
	if err != nil {
		return abi.Verdict{}, p.unavailable(ErrClosed, err)
	}
	budget := p.host.budgets.of(tenant)
	if budget != nil {
		if wait, ok := p.host.budgets.start(budget); !ok {
			// Not started: the tenant's plugin time is spent, and it comes
			// back with time, as an instance does.
			ce := p.unavailable(ErrUnavailable, fmt.Errorf("host: %s: tenant %s: no plugin time left", p.ref, tenant))
			ce.Detail = p.host.budgets.detail(wait)
			return abi.Verdict{}, ce
		}
	}
	inst, deadline, err := pl.acquire(ctx, time.Duration(p.limits.TimeoutMs)*time.Millisecond)
	var charged time.Time
	if budget != nil && err == nil {
		// The charge runs while the call holds its instance, not while
		// it waited for one.
		charged = p.host.budgets.now()
	}
	if err != nil {
		if errors.Is(err, ErrTimeout) {
			// The instance this call waited for did not start in its time.
			st.timeouts.Add(1)
			st.observe(time.Since(start))
			return abi.Verdict{}, &CallError{Plugin: p.ref, Code: abi.PluginTimeout, Kind: ErrTimeout,
				Detail: fmt.Sprintf("%dms", p.limits.TimeoutMs), Err: err}
		}
		kind := ErrUnavailable
		if errors.Is(err, ErrClosed) {
			kind = ErrClosed
		}
		return abi.Verdict{}, p.unavailable(kind, err)
	}
	if !pl.serves(inst) {
		// Never reached: pools hold one tenant's instances. Were it, the
		// instance is closed, not used.
		p.stats.crossTenant.Add(1)
		pl.release(ctx, inst, false)
		return abi.Verdict{}, p.unavailable(ErrUnavailable, fmt.Errorf("host: %s: an instance of tenant %s offered to tenant %s", p.ref, inst.tenant, tenant))
	}
	inst.calls++
	inst.st.rec.Reset()
	inst.st.logs = 0
	inst.st.req = req
	if index != nil {
		index(&inst.st.members)
	} else {
		inst.st.members.Reset(req)
	}
	inst.st.lastKey, inst.st.lastOut, inst.st.hostBytes = inst.st.lastKey[:0], nil, 0
	inst.st.lastRefill, inst.st.lastQuantum = 0, 0
	cctx, cancel := context.WithDeadline(ctx, deadline)
	err = inst.impl.handle(withState(cctx, inst.st), req, tail)
	cancel()
	if budget != nil {
		p.host.budgets.charge(budget, charged)
	}
	inst.st.members.Reset(nil)
	inst.st.lastOut = nil
	if err != nil {
		inst.st.req = nil
		ce := p.classify(ctx, err, inst)
		pl.release(ctx, inst, false)
		st.observe(time.Since(start))
		return abi.Verdict{}, ce
	}
	inst.st.req = nil
	v, verr := inst.st.rec.Finish()
	p.noteMemory(inst)
	pl.release(ctx, inst, true)
	st.observe(time.Since(start))
	if verr != nil {
		var viol *abi.Violation
		errors.As(verr, &viol)
		if viol.Code == abi.PluginOutputTooLarge {
			st.outputTooLarge.Add(1)
		} else {
			st.violations.Add(1)
		}
		return abi.Verdict{}, &CallError{Plugin: p.ref, Code: viol.Code, Kind: ErrViolation, Violation: viol, Detail: viol.Text(abi.LocaleEN)}
	}
	st.count(v)
	return v, nil
}

// memorySizer is implemented by instances that can report their linear
// memory size.
type memorySizer interface{ memoryBytes() int64 }

func (p *Plugin) noteMemory(inst *instance) {
	ms, ok := inst.impl.(memorySizer)
	if !ok {
		return
	}
	n := ms.memoryBytes()
	for {
		old := p.memHigh.Load()
		if n <= old || p.memHigh.CompareAndSwap(old, n) {
			return
		}
	}
}

func (p *Plugin) unavailable(kind, err error) *CallError {
	p.stats.unavailable.Add(1)
	code := abi.PluginUnavailable
	if p.manifest.Role == abi.RoleGuard {
		code = abi.GuardUnavailable
	}
	return &CallError{Plugin: p.ref, Code: code, Kind: kind, Err: err}
}

// classify turns a failed guest call into a CallError.
func (p *Plugin) classify(ctx context.Context, err error, inst *instance) *CallError {
	stderr := inst.impl.stderr()
	ce := &CallError{Plugin: p.ref, Stderr: stderr, Err: err}
	code, isExit := exitCode(err)
	switch {
	case ctx.Err() != nil:
		p.stats.unavailable.Add(1)
		ce.Kind, ce.Code = ErrCanceled, abi.GuardUnavailable
		if p.manifest.Role != abi.RoleGuard {
			ce.Code = abi.PluginUnavailable
		}
		ce.Detail = "canceled by the caller"
	case errors.Is(err, errCallVoid):
		// A host function ended a call it had voided; the recorder says why.
		_, verr := inst.st.rec.Finish()
		var viol *abi.Violation
		errors.As(verr, &viol)
		if viol.Code == abi.PluginOutputTooLarge {
			p.stats.outputTooLarge.Add(1)
		} else {
			p.stats.violations.Add(1)
		}
		ce.Kind, ce.Code, ce.Violation, ce.Detail = ErrViolation, viol.Code, viol, viol.Text(abi.LocaleEN)
	case isExit && (code == sys.ExitCodeDeadlineExceeded || code == sys.ExitCodeContextCanceled):
		p.stats.timeouts.Add(1)
		ce.Kind, ce.Code = ErrTimeout, abi.PluginTimeout
		ce.Detail = fmt.Sprintf("%dms", p.limits.TimeoutMs)
	case errors.Is(err, errHostMemory) || strings.Contains(stderr, "out of memory"):
		p.stats.memory.Add(1)
		ce.Kind, ce.Code = ErrMemoryLimit, abi.PluginMemoryLimit
		ce.Detail = fmt.Sprintf("%d pages", p.limits.MemoryPages)
	default:
		p.stats.traps.Add(1)
		ce.Kind, ce.Code = ErrTrap, abi.PluginTrap
		ce.Detail = trapDetail(err, stderr, isExit, code)
	}
	return ce
}

func trapDetail(err error, stderr string, isExit bool, code uint32) string {
	for _, line := range strings.Split(stderr, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return truncate(line, 200)
		}
	}
	if isExit {
		return fmt.Sprintf("exit code %d", code)
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return truncate(msg, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Guard runs a guard on req and applies the failure policy, so the result is
// always a verdict: pass, or an observation. Effects of a shadow or failed
// call are dropped. The host filters req.State in place (deny by default);
// GuardEnvelope leaves a shared request untouched.
func (p *Plugin) Guard(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	ctx, span := p.startCall(ctx, abi.RoleGuard, tenant, req)
	v, err := p.guard(ctx, tenant, req, nil)
	endCall(span, v, err)
	return v
}

// GuardEnvelope is Guard on an envelope prepared once for all the guards of
// one phase of a call: the plugin receives the envelope's common part, its
// own config and the state views it was granted, spliced without
// re-encoding them. env is only read.
func (p *Plugin) GuardEnvelope(ctx context.Context, tenant string, env *Envelope) abi.Verdict {
	ctx, span := p.startCall(ctx, abi.RoleGuard, tenant, &env.req)
	v, err := p.guard(ctx, tenant, &env.req, env)
	endCall(span, v, err)
	return v
}

// guard is Guard; err is the plugin's own failure, for the span. With env,
// req is env's request and the envelope is env's.
func (p *Plugin) guard(ctx context.Context, tenant string, req *abi.Request, env *Envelope) (abi.Verdict, error) {
	if p.manifest.Role != abi.RoleGuard || (req.Phase != "" && !p.manifest.RunsIn(req.Phase)) {
		ce := p.unavailable(ErrWrongRole, fmt.Errorf("host: %s is a %s for phases %v, called as guard in phase %q: %w",
			p.ref, p.manifest.Role, p.manifest.Phases, req.Phase, ErrWrongRole))
		return abi.Verdict{Observation: ptr(p.failure(ce, req.Locale))}, ce
	}
	var v abi.Verdict
	var err error
	if env != nil {
		v, err = p.callEnvelope(ctx, tenant, env)
	} else {
		req.Kind = abi.RoleGuard
		v, err = p.call(ctx, tenant, req)
	}
	switch p.policy.Failure {
	case Shadow:
		p.host.log.InfoContext(ctx, "shadow guard verdict", "plugin", p.ref, "tool", req.Tool, "phase", req.Phase, "verdict", verdictSummary(v, err))
		if err != nil || !v.Pass {
			p.stats.shadowDiffers.Add(1)
		}
		return abi.Verdict{Pass: true}, err
	case FailOpen:
		if err != nil {
			p.stats.failOpen.Add(1)
			p.host.log.WarnContext(ctx, "guard failed open", "plugin", p.ref, "tool", req.Tool, "err", err)
			return abi.Verdict{Pass: true}, err
		}
	}
	if err != nil {
		return abi.Verdict{Observation: ptr(p.failure(err, req.Locale))}, err
	}
	return stamp(v, req.Locale), nil
}

// stamp gives a plugin's observation the request's locale, so its Message
// uses the right template.
func stamp(v abi.Verdict, l abi.Locale) abi.Verdict {
	if v.Observation != nil {
		v.Observation.Locale = l
	}
	return v
}

// Builtin runs a builtin tool on req. A failure of the plugin is a FAILED
// observation; a tool the plugin does not provide is CATALOG_DENIED.
func (p *Plugin) Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	ctx, span := p.startCall(ctx, abi.RoleBuiltin, tenant, req)
	v, err := p.builtin(ctx, tenant, req)
	endCall(span, v, err)
	return v
}

// builtin is Builtin; err is the plugin's own failure, for the span.
func (p *Plugin) builtin(ctx context.Context, tenant string, req *abi.Request) (abi.Verdict, error) {
	if p.manifest.Role != abi.RoleBuiltin || !p.manifest.Provides(req.Tool) {
		l := req.Locale
		o := abi.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", req.Tool), abi.NextCatalog.Text(l))
		return abi.Verdict{Observation: &o}, nil
	}
	req.Kind = abi.RoleBuiltin
	v, err := p.call(ctx, tenant, req)
	if err != nil {
		return abi.Verdict{Observation: ptr(p.failure(err, req.Locale))}, err
	}
	return stamp(v, req.Locale), nil
}

func (p *Plugin) call(ctx context.Context, tenant string, req *abi.Request) (abi.Verdict, error) {
	req.ABI = abi.Version
	if req.Config == nil {
		req.Config = p.policy.Config
	}
	// Deny by default: only the state views the plugin was granted travel.
	FilterViews(req.State, p.grant)
	buf := envelopes.Get().(*[]byte)
	b := req.AppendJSON((*buf)[:0])
	v, err := p.invoke(ctx, tenant, b, responseTail(req.Response), nil)
	if cap(b) <= 1<<20 {
		*buf = b
		envelopes.Put(buf)
	}
	return v, err
}

func (p *Plugin) callEnvelope(ctx context.Context, tenant string, env *Envelope) (abi.Verdict, error) {
	config := env.req.Config
	if config == nil {
		config = p.policy.Config
	}
	buf := envelopes.Get().(*[]byte)
	b := env.appendFor((*buf)[:0], config, p.grant)
	v, err := p.invoke(ctx, tenant, b, responseTail(env.response), func(m *services.Members) { env.membersFor(m, b, config, p.grant) })
	if cap(b) <= 1<<20 {
		*buf = b
		envelopes.Put(buf)
	}
	return v, err
}

// responseTail is the length of the response member abi.Request.AppendJSON
// and Envelope.appendFor write last, before the closing brace: 0 when
// there is no response.
func responseTail(response json.RawMessage) int {
	if len(response) == 0 {
		return 0
	}
	return len(responseMember) + len(response)
}

// failure turns a failed call into the observation its role calls for.
func (p *Plugin) failure(err error, l abi.Locale) abi.Observation {
	var ce *CallError
	if !errors.As(err, &ce) {
		ce = p.unavailable(ErrUnavailable, err)
	}
	info, _ := ce.Code.Info()
	detail := ce.Detail
	if ce.Violation != nil {
		detail = ce.Violation.Text(l)
	} else if detail == "" && ce.Kind != nil {
		detail = ce.Kind.Error()
	}
	reason := info.Reason(l, "plugin", p.ref, "detail", detail, "timeout", fmt.Sprintf("%dms", p.limits.TimeoutMs),
		"limit", fmt.Sprint(p.limits.MaxOutputBytes))
	if ce.Code == abi.PluginInputTooLarge {
		reason = info.Reason(l, "plugin", p.ref, "limit", fmt.Sprint(p.limits.MaxInputBytes))
	}
	var next string
	switch info.Signal {
	case abi.SignalRetry:
		next = abi.NextRetryLater.Text(l)
	case abi.SignalChange:
		next = abi.NextShrinkCall.Text(l)
	default:
		next = abi.NextReportFailure.Text(l)
	}
	var o abi.Observation
	if p.manifest.Role == abi.RoleGuard {
		o = abi.Rejected(ce.Code, reason, next)
	} else {
		o = abi.Failed(ce.Code, reason, next)
	}
	o.Locale = l
	return o
}

func ptr[T any](v T) *T { return &v }

// envelopes recycles request buffers: a guarded call encodes one envelope per
// guard, mostly state views.
var envelopes = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func verdictSummary(v abi.Verdict, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case v.Pass:
		return "pass"
	case v.Observation != nil:
		return v.Observation.Outcome.String() + " " + string(v.Observation.Code)
	}
	return "none"
}

// Envelope is a guard request encoded once for every guard of one phase of
// a call. What all the guards share (tool, call id, locale, provenance, the
// tool's result, contract and schemas, the arguments as given and as bound,
// the response) is encoded when the request is set; each guard's envelope
// splices in only its own config and the state views it was granted,
// whose bytes are shared, never re-encoded nor copied into a map per guard.
// The bytes are those abi.Request.AppendJSON makes of the request as Guard
// would filter it.
//
// An Envelope is for one goroutine at a time; guards only read it.
type Envelope struct {
	req      abi.Request // State and Response are kept apart
	keys     []string    // state keys, sorted
	quoted   []string    // keys that need escaping, encoded; "" for a plain one
	views    []json.RawMessage
	response json.RawMessage
	enc      []byte // req without config, state and response, open
	headLen  int    // the part of enc before config
	spliced  bool   // enc splits at headLen; otherwise AppendFor encodes whole

	common  []envMember // enc's members, once indexed (MembersFor)
	head    []byte      // enc's head, closed, when indexed from its layout
	indexed bool
}

// Set prepares the envelope for req. Its state views and response are kept
// by reference and must not change while the envelope is in use; the rest is
// encoded now. Call Set again after changing any field.
func (e *Envelope) Set(req *abi.Request) {
	e.req = *req
	e.indexed = false
	e.req.ABI, e.req.Kind = abi.Version, abi.RoleGuard
	e.req.State, e.req.Response = nil, nil
	e.response = req.Response
	e.keys, e.quoted, e.views = e.keys[:0], e.quoted[:0], e.views[:0]
	for k := range req.State {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys)
	for _, k := range e.keys {
		e.views = append(e.views, req.State[k])
		e.quoted = append(e.quoted, quoteKey(k))
	}
	config := e.req.Config
	e.req.Config = nil
	head := abi.Request{ABI: e.req.ABI, Kind: e.req.Kind, Phase: e.req.Phase, Tool: e.req.Tool,
		CallID: e.req.CallID, Locale: e.req.Locale, Provenance: e.req.Provenance}
	e.enc = head.AppendJSON(e.enc[:0])
	e.headLen = len(e.enc) - 1
	mark := len(e.enc)
	e.enc = e.req.AppendJSON(e.enc)
	// The common part must open with the head (AppendJSON writes the small
	// fields first, config after them); a layout that does not is encoded
	// whole per guard instead of spliced.
	e.spliced = bytes.Equal(e.enc[:e.headLen], e.enc[mark:mark+e.headLen])
	e.enc = append(e.enc[:0], e.enc[mark:len(e.enc)-1]...)
	e.req.Config = config
}

// Reset drops what the envelope refers to, keeping its buffers for reuse.
func (e *Envelope) Reset() {
	e.req, e.response = abi.Request{}, nil
	clear(e.views)
	e.keys, e.quoted, e.views = e.keys[:0], e.quoted[:0], e.views[:0]
	e.enc, e.headLen, e.spliced = e.enc[:0], 0, false
	clear(e.common)
	e.common, e.indexed = e.common[:0], false
}

// Request is the envelope's request without its state views and response.
func (e *Envelope) Request() *abi.Request { return &e.req }

// AppendFor appends the envelope of one guard: config is its config, m the
// manifest of an in-process guard, granted the state views it asks for.
func (e *Envelope) AppendFor(dst []byte, config json.RawMessage, m *abi.Manifest) []byte {
	return e.appendFor(dst, config, m.Capabilities)
}

// appendFor is AppendFor for a guard granted grant.
func (e *Envelope) appendFor(dst []byte, config json.RawMessage, grant []abi.Capability) []byte {
	if !e.spliced {
		r := e.req
		r.Config, r.Response, r.State = config, e.response, map[string]json.RawMessage{}
		for i, k := range e.keys {
			if ViewGranted(k, grant) {
				r.State[k] = e.views[i]
			}
		}
		return r.AppendJSON(dst)
	}
	dst = append(dst, e.enc[:e.headLen]...)
	if len(config) > 0 {
		dst = append(dst, `,"config":`...)
		dst = append(dst, config...)
	}
	dst = append(dst, e.enc[e.headLen:]...)
	granted, written := 0, 0
	for i, k := range e.keys {
		if !ViewGranted(k, grant) {
			continue
		}
		if granted == 0 {
			dst = append(dst, `,"state":{`...)
		}
		granted++
		if len(e.views[i]) == 0 {
			continue
		}
		if written > 0 {
			dst = append(dst, ',')
		}
		written++
		if q := e.quoted[i]; q != "" {
			dst = append(dst, q...)
		} else {
			dst = append(dst, '"')
			dst = append(dst, k...)
			dst = append(dst, '"')
		}
		dst = append(dst, ':')
		dst = append(dst, e.views[i]...)
	}
	if granted > 0 {
		dst = append(dst, '}')
	}
	if len(e.response) > 0 {
		dst = append(dst, `,"response":`...)
		dst = append(dst, e.response...)
	}
	return append(dst, '}')
}

// quoteKey returns k encoded as a JSON string when it needs escaping, and ""
// for the plain ASCII keys of every known state view.
func quoteKey(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(k)
			return strings.TrimSuffix(b.String(), "\n")
		}
	}
	return ""
}
