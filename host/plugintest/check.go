package plugintest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/jsonschema"
)

// tenant is the pool every call of a run uses.
const tenant = "plugintest"

// maxDetail bounds a check's detail, so a verdict that echoes a large
// request does not flood the report.
const maxDetail = 400

// Check runs every check against the module wasm and returns the report. It
// never stops early except when the plugin does not load, since nothing else
// can be checked then. It needs no testing.T: `warden plugin test` uses it.
func Check(ctx context.Context, wasm []byte, opts Options) Report {
	name := opts.Name
	if name == "" {
		name = "plugin"
	}
	r := &run{rep: Report{Plugin: name, SHA256: host.Digest(wasm)}, opts: opts, tenant: tenant}
	h := opts.On
	if h == nil {
		var err error
		if h, err = host.New(opts.Host); err != nil {
			r.add("load", false, err.Error())
			return r.rep
		}
		defer h.Close(context.WithoutCancel(ctx))
	} else {
		r.tenant = host.ProbeTenant // never charged to a tenant's plugin time
	}
	p, err := h.Load(ctx, host.Source{Name: name, Bytes: wasm, SHA256: opts.SHA256}, opts.Policy)
	if err != nil {
		r.add("load", false, err.Error())
		return r.rep
	}
	defer p.Close(context.WithoutCancel(ctx))
	r.p, r.m = p, p.Manifest()
	r.rep.Plugin, r.rep.Loader = p.Ref(), p.Loader()
	r.add("load", true, fmt.Sprintf("%s via the %s loader, ABI %d, sha256 %s", p.Ref(), p.Loader(), r.m.ABI, p.Digest()))
	before := p.Stats()

	r.checkManifest()
	r.checkConfig()
	r.cases = r.caseInputs()
	inputs := append([]input(nil), r.cases...)
	inputs = append(inputs, r.probes()...)
	first := make([]outcome, len(inputs))
	for i, in := range inputs {
		first[i] = r.call(ctx, in)
		ok, detail := r.judge(in, first[i])
		r.add(in.name, ok, detail)
	}
	r.checkDeterministic(ctx, inputs, first)
	r.checkConcurrent(ctx, inputs, first)
	r.checkLimits(before, p.Stats())
	return r.rep
}

// run is the state of one Check.
type run struct {
	rep  Report
	opts Options
	// tenant is the pool the calls run in.
	tenant string
	p      *host.Plugin
	m      abi.Manifest
	// cases are the author's cases as sent.
	cases []input

	mu      sync.Mutex
	slowest time.Duration
}

func (r *run) add(name string, ok bool, detail string) {
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "…"
	}
	r.rep.Checks = append(r.rep.Checks, Result{Name: name, OK: ok, Detail: detail})
}

// checkManifest checks what Load does not: that the schemas compile with
// the validator the host offers plugins, and that a builtin's tools say what
// they do, since the model chooses among them by their descriptions.
func (r *run) checkManifest() {
	m := r.m
	var problems []string
	if err := m.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	var what string
	switch m.Role {
	case abi.RoleGuard:
		what = fmt.Sprintf("guard %s %s for phases %v", m.Name, m.Version, m.Phases)
	case abi.RoleBuiltin:
		names := make([]string, len(m.Tools))
		for i, t := range m.Tools {
			names[i] = t.Name
			if strings.TrimSpace(t.Description) == "" {
				problems = append(problems, fmt.Sprintf("tool %s has no description: the model cannot tell what it does", t.Name))
			}
			if _, err := jsonschema.Compile(t.InputSchema); err != nil {
				problems = append(problems, fmt.Sprintf("tool %s: inputSchema: %v", t.Name, err))
			}
		}
		what = fmt.Sprintf("builtin %s %s providing %v", m.Name, m.Version, names)
	}
	if len(m.ConfigSchema) > 0 {
		if _, err := jsonschema.Compile(m.ConfigSchema); err != nil {
			problems = append(problems, fmt.Sprintf("configSchema: %v", err))
		} else if t := typeOf(m.ConfigSchema); t != "" && t != "object" {
			problems = append(problems, fmt.Sprintf("configSchema has type %q, but a config is always an object", t))
		}
	}
	if len(problems) > 0 {
		r.add("manifest", false, strings.Join(problems, "; "))
		return
	}
	r.add("manifest", true, what)
}

// checkConfig validates the policy's config against the configSchema.
func (r *run) checkConfig() {
	cfg := r.opts.Policy.Config
	switch {
	case len(r.m.ConfigSchema) == 0 && len(cfg) == 0:
		r.add("config", true, "no configSchema and no config")
		return
	case len(r.m.ConfigSchema) == 0:
		r.add("config", true, "no configSchema: the config is passed through unchecked")
		return
	case len(cfg) == 0:
		r.add("config", true, "no config given (set Options.Policy.Config to check one)")
		return
	}
	s, err := jsonschema.Compile(r.m.ConfigSchema)
	if err != nil {
		r.add("config", false, fmt.Sprintf("configSchema does not compile: %v", err))
		return
	}
	if errs := s.Validate(cfg); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		r.add("config", false, "config does not match configSchema: "+strings.Join(msgs, "; "))
		return
	}
	r.add("config", true, "config matches configSchema")
}

func typeOf(schema json.RawMessage) string {
	var v struct {
		Type any `json:"type"`
	}
	_ = json.Unmarshal(schema, &v)
	s, _ := v.Type.(string)
	return s
}

// input is one request the kit sends: an author case or a probe.
type input struct {
	name string
	req  abi.Request
	want Want
	// bad is why the case cannot be sent as written (a phase the guard
	// does not declare, …).
	bad string
	// noConfig keeps Config empty instead of filling it from the policy.
	noConfig bool
	// raw, when set, is sent as is (the near-limit probe sizes it exactly).
	raw []byte
}

func (r *run) caseInputs() []input {
	var out []input
	for i, c := range r.opts.Cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprint(i)
		}
		in := input{name: "case/" + name, req: c.Request, want: c.Want}
		if r.m.Role == abi.RoleGuard && in.req.Phase == "" {
			// A guard's case without a phase runs in its first.
			in.req.Phase = r.m.Phases[0]
		}
		switch {
		case c.Want.Pass && (c.Want.Outcome != 0 || c.Want.Code != ""):
			in.bad = fmt.Sprintf("the case wants both a pass and %s", Want{Outcome: c.Want.Outcome, Code: c.Want.Code})
		case c.Want.Pass && r.m.Role == abi.RoleBuiltin:
			in.bad = "the case wants a pass, but a builtin cannot pass"
		case r.m.Role == abi.RoleGuard && c.Request.Phase != "" && !r.m.RunsIn(c.Request.Phase):
			in.bad = fmt.Sprintf("phase %q is not one the manifest declares %v", c.Request.Phase, r.m.Phases)
		case r.m.Role == abi.RoleBuiltin && c.Request.Phase != "":
			in.bad = fmt.Sprintf("phase %q: a builtin has no phases", c.Request.Phase)
		case r.m.Role == abi.RoleBuiltin && !r.m.Provides(c.Request.Tool):
			in.bad = fmt.Sprintf("tool %q is not one the manifest provides", c.Request.Tool)
		}
		if c.Want.Code != "" && !c.Want.Code.Known() && in.bad == "" {
			code, err := r.declared(c.Want.Code)
			if err != nil {
				in.bad = err.Error()
			}
			in.want.Code = code
		}
		out = append(out, in)
	}
	return out
}

// declared resolves a wanted code that is not a registered one to the
// full name of a code the manifest declares ("<plugin>:<NAME>"), given as
// that or as its bare NAME.
func (r *run) declared(c abi.Code) (abi.Code, error) {
	name := string(c)
	if plugin, n, ok := c.Plugin(); ok {
		if plugin != r.m.Name {
			return c, fmt.Errorf("code %s is plugin %s's, not %s's", c, plugin, r.m.Name)
		}
		name = n
	}
	var names []string
	for _, spec := range r.m.Codes {
		if spec.Name == name {
			return abi.PluginCode(r.m.Name, name), nil
		}
		names = append(names, spec.Name)
	}
	if len(names) == 0 {
		return c, fmt.Errorf("code %s is not registered, and the manifest declares no codes", c)
	}
	return c, fmt.Errorf("code %s is not registered, nor one the manifest declares (%s)", c, strings.Join(names, ", "))
}

// outcome is what one call gave.
type outcome struct {
	v   abi.Verdict
	err error
}

// key is what two calls must agree on to count as the same result.
func (o outcome) key() string {
	if o.err != nil {
		var ce *host.CallError
		if errors.As(o.err, &ce) {
			return fmt.Sprintf("error %s %v", ce.Code, ce.Kind)
		}
		return "error " + o.err.Error()
	}
	b, err := json.Marshal(o.v)
	if err != nil {
		return "unencodable verdict: " + err.Error()
	}
	return string(b)
}

// call sends in to the plugin the way the host's Guard and Builtin do, but
// without the failure policy, so a failure shows as the *host.CallError
// that says what the plugin did wrong.
func (r *run) call(ctx context.Context, in input) outcome {
	if in.bad != "" {
		return outcome{}
	}
	raw := in.raw
	if raw == nil {
		b, err := json.Marshal(r.envelope(in))
		if err != nil {
			return outcome{err: fmt.Errorf("plugintest: encode request: %w", err)}
		}
		raw = b
	}
	start := time.Now()
	v, err := r.p.Invoke(ctx, r.tenant, raw)
	d := time.Since(start)
	r.mu.Lock()
	r.slowest = max(r.slowest, d)
	r.mu.Unlock()
	return outcome{v: v, err: err}
}

// envelope completes a request as the host would.
func (r *run) envelope(in input) abi.Request {
	req := in.req
	req.ABI, req.Kind = abi.Version, r.m.Role
	if req.Config == nil && !in.noConfig {
		req.Config = r.opts.Policy.Config
	}
	if len(req.State) > 0 {
		// Only the state views the manifest was granted travel.
		state := map[string]json.RawMessage{}
		for k, v := range req.State {
			if c := abi.Capability(k); c.IsStateView() && r.m.Grants(c) {
				state[k] = v
			}
		}
		req.State = state
	}
	return req
}

// judge decides one input's own check from its first outcome.
func (r *run) judge(in input, o outcome) (bool, string) {
	if in.bad != "" {
		return false, in.bad
	}
	if o.err != nil {
		return false, failure(o.err)
	}
	if err := r.valid(o.v); err != nil {
		return false, err.Error()
	}
	got := describe(inLocale(o.v, in.req.Locale))
	w := in.want
	switch {
	case w.Pass && !o.v.Pass,
		w.Outcome != 0 && (o.v.Observation == nil || o.v.Observation.Outcome != w.Outcome),
		w.Code != "" && (o.v.Observation == nil || o.v.Observation.Code != w.Code):
		return false, fmt.Sprintf("got %s, want %s", got, w)
	}
	return true, got
}

// valid reports why a verdict could not have come through the factories.
// The host's recorder already refuses most of this; the kit checks again so
// that a host bug cannot hide a plugin's.
func (r *run) valid(v abi.Verdict) error {
	switch {
	case v.Pass && v.Observation != nil:
		return errors.New("the verdict both passes and carries an observation")
	case v.Pass && r.m.Role != abi.RoleGuard:
		return errors.New("a builtin passed; it must give a result")
	case !v.Pass && v.Observation == nil:
		return errors.New("the verdict has neither a pass nor an observation")
	case v.Observation != nil:
		o := v.Observation
		if err := o.Validate(); err != nil {
			return fmt.Errorf("invalid observation: %w", err)
		}
		if o.Code.HostReserved() {
			return fmt.Errorf("the plugin reported %s, a code only the host may report", o.Code)
		}
	}
	return nil
}

// failure describes a failed call: what the plugin did, in one line.
func failure(err error) string {
	var ce *host.CallError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	switch {
	case errors.Is(ce, host.ErrTimeout):
		return fmt.Sprintf("%v (%s): no result within %s", ce.Kind, ce.Code, ce.Detail)
	case ce.Code == abi.PluginOutputTooLarge && ce.Violation != nil:
		return fmt.Sprintf("output too large (%s): over the limit of %s bytes", ce.Code, ce.Violation.Detail)
	case ce.Detail != "":
		return fmt.Sprintf("%v (%s): %s", ce.Kind, ce.Code, ce.Detail)
	}
	return fmt.Sprintf("%v (%s)", ce.Kind, ce.Code)
}

// show is what a report says about an outcome: the verdict in short, or
// the verdict's JSON when the short forms of two outcomes would not differ.
func show(o, other outcome) string {
	if o.err != nil {
		return failure(o.err)
	}
	if a, b := describe(o.v), describe(other.v); a != b || other.err != nil {
		return a
	}
	return o.key()
}

// inLocale is v with its observation's message in the request's locale.
func inLocale(v abi.Verdict, l abi.Locale) abi.Verdict {
	if v.Observation != nil && l != "" {
		o := *v.Observation
		o.Locale = l
		v.Observation = &o
	}
	return v
}

// describe summarizes a verdict.
func describe(v abi.Verdict) string {
	if v.Pass {
		if len(v.Args) > 0 {
			return "pass with args " + string(v.Args)
		}
		return "pass"
	}
	o := v.Observation
	if o == nil {
		return "no result"
	}
	if o.Outcome == abi.OutcomeSuccess {
		return "SUCCESS: " + o.Text
	}
	return fmt.Sprintf("%v %s: %s", o.Outcome, o.Code, o.Message())
}

// checkDeterministic sends every input a second time, in reverse order on
// the same instance: a plugin is stateless between calls, so the verdict
// must be the same, whatever call came before it. A plugin granted the real
// clock or randomness may answer differently (a timestamp, a UUID), so only
// its failures count.
func (r *run) checkDeterministic(ctx context.Context, inputs []input, first []outcome) {
	var diffs []string
	n := 0
	for i := len(inputs) - 1; i >= 0; i-- {
		in := inputs[i]
		if in.bad != "" {
			continue
		}
		n++
		again := r.call(ctx, in)
		if first[i].key() != again.key() && (r.exact() || first[i].err != nil || again.err != nil) {
			diffs = append(diffs, fmt.Sprintf("%s: first %s, then %s", in.name, show(first[i], again), show(again, first[i])))
		}
	}
	if len(diffs) > 0 {
		r.add("deterministic", false, "the same request gave another verdict: "+strings.Join(diffs, "; "))
		return
	}
	if !r.exact() {
		r.add("deterministic", true, fmt.Sprintf("%d request(s) sent again in reverse order did not fail (verdicts not compared: the manifest grants %s)", n, r.grants()))
		return
	}
	r.add("deterministic", true, fmt.Sprintf("%d request(s) sent again in reverse order gave the same verdicts", n))
}

// exact reports whether the same request must give the same verdict: not
// for a plugin granted the real clock or randomness.
func (r *run) exact() bool { return !r.m.Grants(abi.CapClock) && !r.m.Grants(abi.CapRandom) }

func (r *run) grants() string {
	var g []string
	for _, c := range []abi.Capability{abi.CapClock, abi.CapRandom} {
		if r.m.Grants(c) {
			g = append(g, string(c))
		}
	}
	return strings.Join(g, " and ")
}

// checkConcurrent sends every input from two goroutines at once (two
// instances of the pool): the verdicts must match the sequential ones.
func (r *run) checkConcurrent(ctx context.Context, inputs []input, first []outcome) {
	const workers = 2
	got := make([][]outcome, workers)
	var wg sync.WaitGroup
	for w := range workers {
		got[w] = make([]outcome, len(inputs))
		wg.Go(func() {
			for i, in := range inputs {
				got[w][i] = r.call(ctx, in)
			}
		})
	}
	wg.Wait()
	var diffs []string
	n := 0
	for i, in := range inputs {
		if in.bad != "" {
			continue
		}
		n++
		for w := range workers {
			if g := got[w][i]; first[i].key() != g.key() && (r.exact() || first[i].err != nil || g.err != nil) {
				diffs = append(diffs, fmt.Sprintf("%s (goroutine %d): %s, alone %s", in.name, w+1, show(g, first[i]), show(first[i], g)))
			}
		}
	}
	if len(diffs) > 0 {
		r.add("concurrent", false, "verdicts differ under concurrency: "+strings.Join(diffs, "; "))
		return
	}
	if !r.exact() {
		r.add("concurrent", true, fmt.Sprintf("%d request(s) from %d goroutines at once did not fail (verdicts not compared: the manifest grants %s)", n, workers, r.grants()))
		return
	}
	r.add("concurrent", true, fmt.Sprintf("%d request(s) from %d goroutines at once gave the sequential verdicts", n, workers))
}

// checkLimits compares the plugin's metrics before and after the run: no
// call may have hit the deadline, the output limit or the memory limit.
func (r *run) checkLimits(before, after host.Stats) {
	l := r.p.Limits()
	timeouts := after.Timeouts - before.Timeouts
	output := after.OutputTooLarge - before.OutputTooLarge
	memory := after.MemoryLimits - before.MemoryLimits
	calls := after.Calls - before.Calls
	if timeouts+output+memory > 0 {
		var parts []string
		if timeouts > 0 {
			parts = append(parts, fmt.Sprintf("%d call(s) hit the %dms deadline", timeouts, l.TimeoutMs))
		}
		if output > 0 {
			parts = append(parts, fmt.Sprintf("%d call(s) went over the %d-byte output limit", output, l.MaxOutputBytes))
		}
		if memory > 0 {
			parts = append(parts, fmt.Sprintf("%d call(s) ran out of the %d-page memory limit", memory, l.MemoryPages))
		}
		r.add("limits", false, fmt.Sprintf("of %d calls, %s", calls, strings.Join(parts, ", ")))
		return
	}
	r.add("limits", true, fmt.Sprintf("%d calls within %dms, %d output bytes and %d memory pages; slowest %v",
		calls, l.TimeoutMs, l.MaxOutputBytes, l.MemoryPages, r.slowest.Round(time.Microsecond)))
}
