package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tracing"
	"github.com/agentwarden/warden/loop"
	"github.com/agentwarden/warden/plugins"
)

// Agent is what a tenant's sessions run: the agent's profile and its
// loaded skills.
type Agent struct {
	Profile contract.AgentProfile
	Skills  []*skillstore.Skill
}

// Agents gives each tenant its agent. LoaderAgents reads a contract store.
type Agents interface {
	Agent(ctx context.Context, tenant string) (Agent, error)
}

// LoaderAgents loads each tenant's agent from a contract store through a
// Loader, by the agent code the tenant is bound to.
type LoaderAgents struct {
	Loader *skillstore.Loader
	// Codes maps a tenant to its agent_code.
	Codes map[string]string
}

// Agent loads the tenant's agent.
func (l LoaderAgents) Agent(ctx context.Context, tenant string) (Agent, error) {
	code, ok := l.Codes[tenant]
	if !ok {
		return Agent{}, fmt.Errorf("server: tenant %s has no agent", tenant)
	}
	a, err := l.Loader.Load(ctx, code)
	if err != nil {
		if a != nil {
			// No skill loads: the profile is still the agent's (the
			// tenant's registry may hold its skills).
			return Agent{Profile: a.Profile}, fmt.Errorf("server: load agent %s: %w", code, err)
		}
		return Agent{}, fmt.Errorf("server: load agent %s: %w", code, err)
	}
	return Agent{Profile: a.Profile, Skills: a.Skills}, nil
}

// Options configure a Server. New validates them once.
type Options struct {
	// Keys maps a bearer API key to the tenant it acts for.
	Keys map[string]string
	// AdminKeys reach the admin API (plugin slots); empty disables it.
	AdminKeys []string
	// MetricsKeys reach what Operator guards (GET /metrics), as admin keys
	// do; they reach nothing else. A scraper gets a key of its own that
	// cannot swap plugins.
	MetricsKeys []string

	Agents Agents
	// Tools are the business tools every session calls.
	Tools tools.Provider
	// NewModel returns the model of a new session.
	NewModel func(tenant, session string) (model.Model, error)
	// NewStore returns the state store of a new session, opened with opt
	// (its id, clock and the agent's state settings); nil means
	// state.NewMemory(opt).
	NewStore func(session string, opt state.Options) (state.Store, error)
	// Guards are the first-party guards by chain position name, e.g.
	// chain.NativeGuards() to run package plugins' in-process; required
	// unless Plugins is set. A slot installed through the admin API under
	// a first-party guard's name replaces it for sessions created
	// afterwards.
	Guards map[string]chain.Guard
	// Builtins are the builtin plugins, e.g. loop.NativeBuiltins(Now);
	// required unless Plugins is set. A slot installed through the admin
	// API under a first-party builtin's name (control, node, env) replaces
	// that builtin likewise.
	Builtins []loop.Builtin
	// Loop is the loop's config; its Tenant is set per session.
	Loop loop.Config
	// State are the state.* settings of every session's store.
	State StateSettings
	// AgentSettings replace Loop and State for the sessions of the agent
	// whose agent_code keys them.
	AgentSettings map[string]AgentSettings
	// Platform says how a trusted gateway passes the login identity of a
	// message (CONTRACT_SPEC §11); the zero value accepts none.
	Platform PlatformOptions
	// ToolTimeout is the invoker's timeout for tools without timeoutMs;
	// 0 means the invoker's default.
	ToolTimeout time.Duration
	// RunTimeout bounds one run of a task (a message or an answer). A run
	// is not cut when its client goes away, only by this deadline.
	RunTimeout time.Duration

	// Host loads admin-installed plugin generations; required with
	// AdminKeys.
	Host *host.Host
	// Policy is the policy of admin-installed plugins; its Config is
	// replaced by the upload's. Its Capabilities are what a slot other
	// than a first-party one grants (nothing when unset); a first-party
	// slot grants exactly its own plugin's capabilities instead.
	Policy host.Policy
	// SelfTest checks a candidate generation before it serves; nil means
	// DefaultSelfTest.
	SelfTest host.SelfTest

	// Plugins is a directory of first-party wasm modules named as `make
	// plugins` names them (argpolicy.wasm … evidence.wasm, control.wasm,
	// node.wasm, env.wasm), each with an optional sidecar <name>.json
	// ({"sha256":"…","config":{…}}). When set, LoadPlugins loads every one
	// as a slot with Policy (Host required, Guards and Builtins nil), so
	// sessions run them as wasm and Watch can swap them; the env builtin
	// reads the time through the Host's Clock, which should be Now.
	Plugins string
	// Generations records every install, refusal and rollback of a slot,
	// from the admin API and the plugin directory alike; nil keeps them in
	// memory (MemoryGenerations).
	Generations GenerationLog
	// Instance names this process in generation records when several
	// instances share a store.
	Instance string
	// PrepareDeadline is how long the live instances sharing the store
	// have to prepare (load and check) a slot's candidate; one that has
	// not answered by then refuses it for all. 0 means
	// DefaultPrepareDeadline.
	PrepareDeadline time.Duration
	// plugins is the runtime state of slots beyond the host's: the
	// generation log in use and the plugin directory's watcher. Servers
	// create it on first use (see pluginsOf); callers cannot set it.
	plugins *pluginState

	// Directory keeps the sessions, their API tasks, approvals and trace
	// events, and the instances' leases; nil keeps them in memory
	// (store.NewMemory), for one process. With a durable Directory a
	// session outlives its process: after a restart, or when its instance
	// died, the next request for it opens it again (on any instance, once
	// the owner's lease ran out) and a write the dead process left in
	// flight is verified, never issued again.
	Directory store.Directory
	// Lease is how long this instance's hold on its sessions lasts
	// without renewal (Start renews it); 0 means 15 s.
	Lease time.Duration
	// Exclusive says this is the only instance on Directory (the SQLite
	// deployment): Start ends every other instance's lease, since whoever
	// held the database before is gone.
	Exclusive bool
	// IdleTimeout is how long a session no request used stays open in
	// memory; after it the session is closed here (its state stays in
	// Directory, and its next request opens it again). 0 means 30 minutes
	// with a Directory, and never without one (memory holds the only copy).
	IdleTimeout time.Duration
	// Recoverable lists the sessions that may hold writes a dead process
	// left in flight (sqlstore's DB.SessionsWithStartedWrites); Start and
	// each lease period open those this instance may claim, which
	// recovers them. Nil recovers a session only when it is next opened.
	Recoverable func(ctx context.Context) ([]string, error)

	// Instances lists the instances sharing Directory with their leases
	// and sessions, for GET /admin/v1/instances; nil shows this instance
	// alone.
	Instances func(ctx context.Context) ([]Instance, error)
	// Feedback is where GET /v1/feedback/tools reads the feedback records
	// the sessions' Observe sinks stored; nil answers 404 feedback_off.
	Feedback FeedbackSource

	// Registry keeps each tenant's plugin modules and skills (PUT
	// /v1/plugins/{name}, PUT /v1/skills/{skill_key}); nil uses Directory
	// when it implements store.Registry (store.Memory and sqlstore's DB
	// do).
	Registry store.Registry
	// Capabilities is each tenant's allow-list: a tenant module whose
	// manifest asks for a capability outside it is refused at install
	// (and its skills dropped at load, should the list shrink). A tenant
	// not named may have none.
	Capabilities map[string][]abi.Capability

	// Limits bound each tenant's requests, sessions, runs and tool calls on
	// this instance; the zero value limits nothing (see DefaultLimits).
	Limits Limits

	// Forward sends a request for a session another live instance owns to
	// that instance and relays its answer (forward.go); nil answers 409
	// session_elsewhere naming the owner instead.
	Forward *ForwardOptions

	// Observe returns more sinks for a new session's trace events (logs,
	// metrics, feedback records); nil or a nil sink adds none.
	Observe func(tenant, session string) loop.Sink

	Logger *slog.Logger
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
}

// Server serves the API. Create it with New; Handler is its routes.
type Server struct {
	opt    Options
	keys   map[[32]byte]string
	admins [][32]byte
	// operators are the admin keys and the metrics keys.
	operators [][32]byte
	log       *slog.Logger
	ready     atomic.Bool
	limits    *limiter

	// gateways are the tenant keys that may pass the login identity.
	gateways map[[32]byte]bool

	dir store.Directory
	// leaseUntil is the end of this instance's lease as last renewed, in
	// unix nanoseconds; 0 before Start (no lease is kept).
	leaseUntil atomic.Int64
	stopBeat   context.CancelFunc
	beatDone   chan struct{}

	// runs counts the runs in flight (launch); Close waits for them.
	runs sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
	// openMu serialises opening sessions from the directory.
	openMu sync.Mutex

	// installMu serialises installs and rollbacks; slotMu guards slots.
	installMu sync.Mutex
	slotMu    sync.Mutex
	slots     map[string]*host.Slot

	// treg loads the tenants' guards (tenantRegistry).
	treg *tenantRegistry
	// kit keeps what the plugin kit found for each tenant module and config.
	kit kitResults

	// fwd forwards requests to their session's owner; nil when off.
	fwd *forwarder
}

// New validates the options and returns a server that is ready.
func New(o Options) (*Server, error) {
	switch {
	case len(o.Keys) == 0:
		return nil, fmt.Errorf("%w: no tenant keys", ErrConfig)
	case o.Agents == nil:
		return nil, fmt.Errorf("%w: no agents", ErrConfig)
	case o.Tools == nil:
		return nil, fmt.Errorf("%w: no tools", ErrConfig)
	case o.NewModel == nil:
		return nil, fmt.Errorf("%w: no model", ErrConfig)
	case len(o.AdminKeys) > 0 && o.Host == nil:
		return nil, fmt.Errorf("%w: admin keys without a plugin host", ErrConfig)
	case o.RunTimeout < 0 || o.ToolTimeout < 0 || o.Lease < 0 || o.IdleTimeout < 0 || o.PrepareDeadline < 0:
		return nil, fmt.Errorf("%w: negative timeout", ErrConfig)
	}
	if err := o.Loop.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := o.validateSettings(); err != nil {
		return nil, err
	}
	if err := o.Platform.validate(o.Keys); err != nil {
		return nil, err
	}
	if err := o.Limits.validate(); err != nil {
		return nil, err
	}
	s := &Server{opt: o, keys: map[[32]byte]string{}, log: o.Logger,
		sessions: map[string]*session{}, slots: map[string]*host.Slot{}}
	if err := s.setKeys(o); err != nil {
		return nil, err
	}
	if err := o.validateCapabilities(); err != nil {
		return nil, err
	}
	fwd, err := newForwarder(o.Forward)
	if err != nil {
		return nil, err
	}
	s.fwd = fwd
	if o.Plugins == "" && (o.Guards == nil || o.Builtins == nil) {
		return nil, fmt.Errorf("%w: no first-party plugins: Guards and Builtins, or a plugin directory", ErrConfig)
	}
	s.limits = newLimiter(o.Limits, o.Keys)
	s.setDefaults()
	s.ready.Store(true)
	return s, nil
}

// setKeys checks the tenant, admin and metrics keys and keeps their
// digests.
func (s *Server) setKeys(o Options) error {
	for k, t := range o.Keys {
		if k == "" || t == "" {
			return fmt.Errorf("%w: empty key or tenant", ErrConfig)
		}
		if t == host.ProbeTenant {
			return fmt.Errorf("%w: tenant name %q is reserved for self-tests", ErrConfig, t)
		}
		s.keys[sha256.Sum256([]byte(k))] = t
	}
	for _, k := range o.AdminKeys {
		if k == "" {
			return fmt.Errorf("%w: empty admin key", ErrConfig)
		}
		if _, ok := s.keys[sha256.Sum256([]byte(k))]; ok {
			return fmt.Errorf("%w: an admin key is also a tenant key", ErrConfig)
		}
		s.admins = append(s.admins, sha256.Sum256([]byte(k)))
	}
	s.gateways = map[[32]byte]bool{}
	for _, k := range o.Platform.GatewayKeys {
		s.gateways[sha256.Sum256([]byte(k))] = true
	}
	s.operators = append(s.operators, s.admins...)
	for _, k := range o.MetricsKeys {
		if k == "" {
			return fmt.Errorf("%w: empty metrics key", ErrConfig)
		}
		if _, ok := s.keys[sha256.Sum256([]byte(k))]; ok {
			return fmt.Errorf("%w: a metrics key is also a tenant key", ErrConfig)
		}
		s.operators = append(s.operators, sha256.Sum256([]byte(k)))
	}
	return nil
}

// validateCapabilities checks that each tenant's allow-list is a tenant's
// and names known capabilities.
func (o Options) validateCapabilities() error {
	for t, caps := range o.Capabilities {
		known := false
		for _, v := range o.Keys {
			known = known || v == t
		}
		if !known {
			return fmt.Errorf("%w: capabilities for %q, which is not a tenant", ErrConfig, t)
		}
		for _, c := range caps {
			if !c.Known() {
				return fmt.Errorf("%w: tenant %s: capability %q is unknown", ErrConfig, t, c)
			}
		}
	}
	return nil
}

// setDefaults fills the options left zero.
func (s *Server) setDefaults() {
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opt.Now == nil {
		s.opt.Now = time.Now
	}
	if s.opt.RunTimeout == 0 {
		s.opt.RunTimeout = 5 * time.Minute
	}
	if s.opt.SelfTest == nil {
		s.opt.SelfTest = DefaultSelfTest
	}
	if s.dir = s.opt.Directory; s.dir == nil {
		s.dir = store.NewMemory()
	}
	if s.opt.Instance == "" {
		s.opt.Instance = "local"
	}
	if s.opt.Lease == 0 {
		s.opt.Lease = 15 * time.Second
	}
	if s.opt.IdleTimeout == 0 && s.opt.Directory != nil {
		s.opt.IdleTimeout = 30 * time.Minute
	}
}

// SetReady changes what /readyz answers (false while draining).
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Close waits for the runs in flight (Drain bounds the wait), then ends the instance's lease (its sessions may move at once) and
// retires every plugin slot.
func (s *Server) Close() {
	// Every run ends by its RunTimeout at the latest.
	s.runs.Wait()
	s.stopPreparing()
	// The generations' counters as the last calls left them.
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.flushCounts(fctx)
	cancel()
	s.release()
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	for _, sl := range s.slots {
		sl.Close()
	}
	s.slots = map[string]*host.Slot{}
}

// Handler returns the API's routes. Every answer carries X-Request-Id:
// the caller's, when it sent one that is safe to log (up to 64 letters,
// digits, '.', '_' or '-'), else a fresh one. An error body repeats it as
// request_id, and the server's log lines about the request name it.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern, rt.handler)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fail(http.StatusNotFound, CodeNotFound, "no route for "+r.Method+" "+r.URL.Path))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(headerRequestID)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(headerRequestID, id)
		rr := r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		mux.ServeHTTP(w, rr)
		// The route the mux matched and its path values, for the
		// middleware around (metrics and spans read the request's Pattern,
		// spans its session and task).
		r.Pattern = rr.Pattern
		for _, name := range wildcards(rr.Pattern) {
			r.SetPathValue(name, rr.PathValue(name))
		}
	})
}

// wildcards are the names of a ServeMux pattern's wildcards
// ("/v1/sessions/{session}/tasks/{task}" has session and task).
func wildcards(pattern string) []string {
	var out []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return out
		}
		if name := strings.TrimSuffix(pattern[i+1:i+j], "..."); name != "" && name != "$" {
			out = append(out, name)
		}
		pattern = pattern[i+j+1:]
	}
}

// route is one route of the API: a ServeMux pattern ("METHOD /path") and
// its handler. docs/openapi.json has one operation per route.
type route struct {
	pattern string
	handler http.Handler
}

func (s *Server) routes() []route {
	return []route{
		{"GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		})},
		{"GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !s.ready.Load() {
				writeError(w, fail(http.StatusServiceUnavailable, "not_ready", "the server is not ready"))
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		})},
		{"GET /openapi.json", http.HandlerFunc(serveOpenAPI)},

		{"POST /v1/sessions", s.tenant(s.createSession)},
		{"GET /v1/sessions", s.tenant(s.listSessions)},
		{"GET /v1/sessions/{session}", s.tenant(s.getSession)},
		{"POST /v1/sessions/{session}/messages", s.tenant(s.limited(s.postMessage))},
		{"GET /v1/sessions/{session}/events", s.tenant(s.streamEvents)},
		{"GET /v1/sessions/{session}/tasks/{task}", s.tenant(s.getTask)},
		{"GET /v1/sessions/{session}/tasks/{task}/trace", s.tenant(s.getTrace)},
		{"POST /v1/sessions/{session}/tasks/{task}/follow-up", s.tenant(s.limited(s.answerFollowUp))},
		{"POST /v1/sessions/{session}/tasks/{task}/verify", s.tenant(s.limited(s.answerVerify))},
		{"POST /v1/sessions/{session}/tasks/{task}/resume", s.tenant(s.limited(s.resumeTask))},
		{"GET /v1/approvals", s.tenant(s.listApprovals)},
		{"GET /v1/events", s.tenant(s.streamTenant)},
		{"GET /v1/approvals/{approval}", s.tenant(s.getApproval)},
		{"POST /v1/approvals/{approval}", s.tenant(s.limited(s.decideApproval))},
		{"GET /v1/feedback/tools", s.tenant(s.feedbackTools)},
		{"GET /v1/plugins", s.tenantOrAdmin(s.listPlugins)},
		{"GET /v1/plugins/{name}", s.tenantOrAdmin(s.getPlugin)},
		{"PUT /v1/plugins/{name}", s.tenantOrAdmin(s.putPlugin)},
		{"DELETE /v1/plugins/{name}", s.tenantOrAdmin(s.deletePlugin)},
		{"GET /v1/skills", s.tenantOrAdmin(s.listSkills)},
		{"GET /v1/skills/{skill_key}", s.tenantOrAdmin(s.getSkill)},
		{"PUT /v1/skills/{skill_key}", s.tenantOrAdmin(s.putSkill)},
		{"DELETE /v1/skills/{skill_key}", s.tenantOrAdmin(s.deleteSkill)},

		{"GET /admin/v1/slots", s.admin(s.listSlots)},
		{"GET /admin/v1/slots/{slot}", s.admin(s.getSlot)},
		{"PUT /admin/v1/slots/{slot}", s.admin(s.installSlot)},
		{"POST /admin/v1/slots/{slot}/rollback", s.admin(s.rollbackSlot)},
		{"GET /admin/v1/instances", s.admin(s.listInstances)},
		{"GET /admin/v1/sessions", s.admin(s.listAllSessions)},
	}
}

type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant string) error

// tenant authenticates a tenant key and reports the handler's error.
func (s *Server) tenant(h tenantHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearer(r)
		t, known := s.keys[sha256.Sum256([]byte(key))]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
			writeError(w, fail(http.StatusUnauthorized, CodeUnauthorized, "a valid tenant API key is required"))
			return
		}
		r, err := s.inbound(r)
		if err != nil {
			writeError(w, err.(*apiError))
			return
		}
		// A hop was counted by the instance the caller reached.
		if wait, ok := s.allowHop(r, t); !ok {
			setRetryAfter(w, wait)
			writeError(w, fail(http.StatusTooManyRequests, CodeTenantRateLimited,
				fmt.Sprintf("the tenant sent more than %g requests a second (burst %d)", s.opt.Limits.Rate, max(s.opt.Limits.Burst, 1))))
			return
		}
		// The request's span, once its key names the tenant, says whose
		// it is (the session and task are named by the request's route).
		tracing.Label(r.Context(), tracing.Task{Tenant: t})
		r = r.WithContext(withKey(r.Context(), key))
		if err := s.serveForwarding(h, w, r, t); err != nil {
			s.report(w, r, err)
		}
	})
}

// admin authenticates an admin key.
func (s *Server) admin(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearer(r)
		sum := sha256.Sum256([]byte(key))
		admin := false
		for _, a := range s.admins {
			if subtle.ConstantTimeCompare(a[:], sum[:]) == 1 {
				admin = true
			}
		}
		if !admin {
			if _, tenant := s.keys[sum]; ok && tenant {
				writeError(w, fail(http.StatusForbidden, CodeForbidden, "the admin API needs an admin key"))
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden-admin"`)
			writeError(w, fail(http.StatusUnauthorized, CodeUnauthorized, "a valid admin key is required"))
			return
		}
		if err := h(w, r); err != nil {
			s.report(w, r, err)
		}
	})
}

// Operator guards an operator's endpoint (GET /metrics, which names every
// tenant) with an admin or metrics key: no key or an unknown one is 401, a
// tenant key 403, in the API's error shape.
func (s *Server) Operator(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearer(r)
		sum := sha256.Sum256([]byte(key))
		if !ok || !anyKey(s.operators, sum) {
			if _, tenant := s.keys[sum]; ok && tenant {
				writeError(w, fail(http.StatusForbidden, CodeForbidden, "this endpoint needs an admin or metrics key"))
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden-operator"`)
			writeError(w, fail(http.StatusUnauthorized, CodeUnauthorized, "an admin or metrics key is required"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func sha256Sum(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// anyKey compares sum with every key in constant time.
func anyKey(keys [][32]byte, sum [32]byte) bool {
	found := false
	for _, k := range keys {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			found = true
		}
	}
	return found
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return "", false
	}
	return strings.TrimSpace(key), true
}

func (s *Server) report(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = fail(http.StatusInternalServerError, CodeInternal, "internal error")
	}
	if ae.status >= 500 {
		s.log.Error("request failed", "request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path, "code", ae.code, "err", err)
	}
	writeError(w, ae)
}

// maxBody bounds a JSON request body.
const maxBody = 1 << 20

// decode reads exactly one JSON object into v, strictly (abi.DecodeStrict):
// an unknown field, a key given twice or a key in another case than the
// field's is refused, so that no client can send a body two readers would
// read two ways ({"decision":"REJECT","decision":"CONFIRM"} or
// {"DECISION":"CONFIRM"}, which encoding/json alone takes as a
// confirmation).
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", tooLarge.Limit))
	case err != nil:
		return fail(http.StatusBadRequest, CodeBadJSON, "the body could not be read")
	case len(bytes.TrimSpace(b)) == 0:
		return fail(http.StatusBadRequest, CodeBadJSON, "the body is empty")
	}
	return strictError(abi.DecodeStrict(b, v))
}

// strictError is the API's answer to abi.DecodeStrict's error; nil for nil.
func strictError(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "abi: strict json: ")
	switch {
	case errors.Is(err, abi.ErrDuplicateKey), errors.Is(err, abi.ErrKeyCase):
		return fail(http.StatusBadRequest, CodeInvalidBody, msg)
	case errors.Is(err, abi.ErrUnknownKey):
		return fail(http.StatusBadRequest, CodeUnknownField, msg)
	case msg == "trailing data":
		return fail(http.StatusBadRequest, CodeBadJSON, "the body must hold exactly one JSON object")
	default:
		// A syntax error, a value of the wrong type, a cut document.
		return fail(http.StatusBadRequest, CodeBadJSON, "the body is not valid JSON: "+strings.TrimPrefix(msg, "json: "))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// RequestID is the answer's X-Request-Id: the server's log lines
		// about the request carry it as request_id.
		RequestID string `json:"request_id,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, e *apiError) {
	var b ErrorBody
	b.Error.Code, b.Error.Message, b.Error.RequestID = e.code, e.message, w.Header().Get(headerRequestID)
	writeJSON(w, e.status, b)
}

// guards returns the first-party guards sessions run now: Options.Guards,
// with the slot of a first-party guard's name (loaded from
// Options.Plugins or installed through the admin API) in its place.
func (s *Server) guards() map[string]chain.Guard {
	g := make(map[string]chain.Guard, len(s.opt.Guards))
	for n, v := range s.opt.Guards {
		g[n] = v
	}
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	for n, sl := range s.slots {
		if p, first := plugins.Lookup(n); g[n] != nil || first && p.Role == abi.RoleGuard {
			g[n] = sl
		}
	}
	return g
}

// builtins returns the builtin plugins sessions run now: Options.Builtins,
// each first-party one served by its slot (control, node, env: loaded from
// Options.Plugins or installed through the admin API) when there is one;
// with a plugin directory, the first-party builtins' slots.
func (s *Server) builtins() []loop.Builtin {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	if s.opt.Builtins == nil {
		var out []loop.Builtin
		for _, p := range plugins.Builtins() {
			if sl, ok := s.slots[p.Name]; ok {
				out = append(out, slotBuiltin{sl})
			}
		}
		return out
	}
	out := make([]loop.Builtin, 0, len(s.opt.Builtins))
	for _, b := range s.opt.Builtins {
		if sl, ok := s.slots[firstPartyBuiltin(b.Manifest())]; ok {
			b = slotBuiltin{sl}
		}
		out = append(out, b)
	}
	return out
}

// firstPartyBuiltin returns the slot name of the first-party builtin m is
// the manifest of, or "".
func firstPartyBuiltin(m abi.Manifest) string {
	for _, p := range plugins.Builtins() {
		if p.Plugin.Manifest.Name == m.Name {
			return p.Name
		}
	}
	return ""
}

// Check assembles a session of every tenant once, so that an agent whose
// skills do not load or name a tool that is not served fails at start,
// not at a tenant's first request. Nothing is kept.
func (s *Server) Check(ctx context.Context) error {
	seen := map[string]bool{}
	var tenants []string
	for _, t := range s.keys {
		if !seen[t] {
			seen[t] = true
			tenants = append(tenants, t)
		}
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		if _, err := s.assemble(ctx, t, newID("s_"), true); err != nil {
			return fmt.Errorf("tenant %s: %w", t, err)
		}
	}
	return nil
}
