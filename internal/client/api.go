package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/loop"
)

// Answer is what every typed call's result carries besides its fields:
// the HTTP status and the answer as the API sent it.
type Answer struct {
	Status int             `json:"-"`
	Raw    json.RawMessage `json:"-"`
}

// Of is the answer itself: every result type has it, by embedding.
func (a *Answer) Of() *Answer { return a }

// result is a result type: it embeds Answer.
type result[T any] interface {
	*T
	Of() *Answer
}

// call sends r and decodes its answer into a new T. When the answer does
// not decode, the result still holds it (Raw) beside the error; what says
// so is bad's, when given, else the request's.
func call[T any, P result[T]](ctx context.Context, c *Client, r Request, bad string) (*T, error) {
	status, b, err := c.Send(ctx, r)
	if err != nil {
		return nil, err
	}
	v := P(new(T))
	*v.Of() = Answer{Status: status, Raw: b}
	if err := json.Unmarshal(b, v); err != nil {
		if bad == "" {
			bad = "the answer to " + r.Method + " " + r.Path
		}
		return (*T)(v), fmt.Errorf("%s is not what the client reads: %w", bad, err)
	}
	return (*T)(v), nil
}

// Page selects a page of a list: at most Limit items (0: the API's
// default) after the cursor After; Status filters approvals.
type Page struct {
	Limit  int
	After  string
	Status string
}

func (p Page) query() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("after", p.After)
	}
	if p.Status != "" {
		q.Set("status", strings.ToUpper(p.Status))
	}
	return q
}

// waitQuery is ?wait= for the calls that run a task: the API's synchronous
// default when wait is 0.
func waitQuery(wait time.Duration) url.Values {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return q
}

// tenantQuery is ?tenant=, for an admin key acting for a tenant.
func tenantQuery(tenant string) url.Values {
	if tenant == "" {
		return url.Values{}
	}
	return url.Values{"tenant": {tenant}}
}

// Sessions.

// SessionSummary is a session of a list.
type SessionSummary struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// SessionList is a page of the tenant's sessions, newest first; Next is
// the cursor of the next page.
type SessionList struct {
	Answer
	Sessions []SessionSummary `json:"sessions"`
	Next     string           `json:"next"`
}

// Session is a session and its tasks.
type Session struct {
	Answer
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Tasks   []Task    `json:"tasks"`
}

// Sessions lists the tenant's sessions (GET /v1/sessions).
func (c *Client) Sessions(ctx context.Context, p Page) (*SessionList, error) {
	return call[SessionList](ctx, c, Request{Method: http.MethodGet, Path: "/v1/sessions", Query: p.query()}, "")
}

// Session reads a session (GET /v1/sessions/{id}).
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	return call[Session](ctx, c, Request{Method: http.MethodGet, Path: "/v1/sessions/" + PathID(id)}, "")
}

// NewSession opens a session (POST /v1/sessions).
func (c *Client) NewSession(ctx context.Context) (*Session, error) {
	return call[Session](ctx, c, Request{Method: http.MethodPost, Path: "/v1/sessions"}, "")
}

// SendMessage posts a user message to a session, which runs a task; wait
// bounds how long the answer waits for it (0: the API's default).
func (c *Client) SendMessage(ctx context.Context, session, text string, wait time.Duration) (*RunResult, error) {
	r := JSONRequest(http.MethodPost, "/v1/sessions/"+PathID(session)+"/messages", waitQuery(wait), map[string]string{"text": text})
	return call[RunResult](ctx, c, r, "")
}

// Events opens a session's event stream (server-sent events) after the
// event numbered after (0: from the start); the caller closes it.
func (c *Client) Events(ctx context.Context, session string, after int64) (io.ReadCloser, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	resp, err := c.Open(ctx, Request{Method: http.MethodGet, Path: "/v1/sessions/" + PathID(session) + "/events", Query: q,
		Header: http.Header{"Accept": {"text/event-stream"}}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Tasks.

// Suspension is what a suspended task waits for.
type Suspension struct {
	Kind           string          `json:"kind"`
	Question       string          `json:"question"`
	ExpectedFields []string        `json:"expectedFields"`
	Tool           string          `json:"tool"`
	Args           json.RawMessage `json:"args"`
}

// Task is a task as the API shows it.
type Task struct {
	Answer
	ID         string      `json:"id"`
	Objective  string      `json:"objective"`
	Status     string      `json:"status"`
	Node       string      `json:"node"`
	Suspension *Suspension `json:"suspension"`
	Approval   string      `json:"approval"`
	Output     string      `json:"output"`
	Reason     string      `json:"reason"`
	Reply      string      `json:"reply"`
}

// RunResult is what a call that runs a task answers: the task, and the
// approval it now waits for.
type RunResult struct {
	Answer
	Task     Task      `json:"task"`
	Approval *Approval `json:"approval"`
}

// Trace is a task's trace events.
type Trace struct {
	Answer
	Task   string       `json:"task"`
	Events []loop.Event `json:"events"`
}

func taskPath(session, task string) string {
	return "/v1/sessions/" + PathID(session) + "/tasks/" + PathID(task)
}

// Task reads a task (GET /v1/sessions/{id}/tasks/{task}).
func (c *Client) Task(ctx context.Context, session, task string) (*Task, error) {
	return call[Task](ctx, c, Request{Method: http.MethodGet, Path: taskPath(session, task)}, "")
}

// Trace reads a task's trace events.
func (c *Client) Trace(ctx context.Context, session, task string) (*Trace, error) {
	return call[Trace](ctx, c, Request{Method: http.MethodGet, Path: taskPath(session, task) + "/trace"}, "")
}

// FollowUp answers the question a task waits for and runs it on.
func (c *Client) FollowUp(ctx context.Context, session, task, answer string, wait time.Duration) (*RunResult, error) {
	r := JSONRequest(http.MethodPost, taskPath(session, task)+"/follow-up", waitQuery(wait), map[string]string{"answer": answer})
	return call[RunResult](ctx, c, r, "")
}

// Verify settles a write the task waits to verify: by its verify tool
// when took is nil, else as took says.
func (c *Client) Verify(ctx context.Context, session, task string, took *bool, wait time.Duration) (*RunResult, error) {
	body := map[string]bool{}
	if took != nil {
		body["took"] = *took
	}
	return call[RunResult](ctx, c, JSONRequest(http.MethodPost, taskPath(session, task)+"/verify", waitQuery(wait), body), "")
}

// Resume runs on a task a dead process left RUNNING.
func (c *Client) Resume(ctx context.Context, session, task string, wait time.Duration) (*RunResult, error) {
	return call[RunResult](ctx, c, Request{Method: http.MethodPost, Path: taskPath(session, task) + "/resume", Query: waitQuery(wait)}, "")
}

// Approvals.

// Approval is a held write as the API shows it.
type Approval struct {
	Answer
	ID         string          `json:"id"`
	Session    string          `json:"session"`
	Task       string          `json:"task"`
	Node       string          `json:"node"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ArgsDigest string          `json:"argsDigest"`
	// ArgsSummary is the bound arguments as the question shows them,
	// sensitive values masked.
	ArgsSummary []struct {
		Label string `json:"label"`
		Value string `json:"value"`
	} `json:"args_summary"`
	Question string     `json:"question"`
	Status   string     `json:"status"`
	Created  time.Time  `json:"created"`
	Answered *time.Time `json:"answered"`
}

// ApprovalList is a page of the tenant's approvals, newest first.
type ApprovalList struct {
	Answer
	Approvals []Approval `json:"approvals"`
	Next      string     `json:"next"`
}

// Approvals lists the tenant's approvals; p.Status filters them.
func (c *Client) Approvals(ctx context.Context, p Page) (*ApprovalList, error) {
	return call[ApprovalList](ctx, c, Request{Method: http.MethodGet, Path: "/v1/approvals", Query: p.query()}, "")
}

// Approval reads an approval.
func (c *Client) Approval(ctx context.Context, id string) (*Approval, error) {
	return call[Approval](ctx, c, Request{Method: http.MethodGet, Path: "/v1/approvals/" + PathID(id)}, "")
}

// Decide answers an approval: CONFIRM, REJECT or CANCEL.
func (c *Client) Decide(ctx context.Context, id, decision string, wait time.Duration) (*RunResult, error) {
	r := JSONRequest(http.MethodPost, "/v1/approvals/"+PathID(id), waitQuery(wait), map[string]string{"decision": decision})
	return call[RunResult](ctx, c, r, "")
}

// Plugin slots and instances (admin).

// Generation is one generation of a plugin slot.
type Generation struct {
	Number    uint64     `json:"number"`
	Ref       string     `json:"ref"`
	Digest    string     `json:"digest"`
	Installed time.Time  `json:"installed"`
	Retired   *time.Time `json:"retired"`
}

// Slot is a plugin slot. Stats is kept as the API names its counters.
type Slot struct {
	Answer
	Name        string       `json:"name"`
	Current     Generation   `json:"current"`
	Generations []Generation `json:"generations"`
	Refused     []struct {
		Digest string    `json:"digest"`
		Reason string    `json:"reason"`
		Origin string    `json:"origin"`
		Time   time.Time `json:"time"`
	} `json:"refused"`
	Stats map[string]json.RawMessage `json:"stats"`
	// Serving is the store generation this instance serves; Kept the
	// slot's generations in the store, the desired one last; Instances
	// what each instance reported.
	Serving uint64 `json:"serving"`
	Kept    []struct {
		Number   uint64    `json:"number"`
		Ref      string    `json:"ref"`
		Digest   string    `json:"digest"`
		Origin   string    `json:"origin"`
		Instance string    `json:"instance"`
		From     uint64    `json:"from"`
		Time     time.Time `json:"time"`
		// Counts sums the generation's counters over the instances
		// that served it; nil when none wrote any.
		Counts *GenerationCounts `json:"counts"`
	} `json:"kept"`
	Instances []struct {
		Instance string    `json:"instance"`
		Serving  uint64    `json:"serving"`
		Digest   string    `json:"digest"`
		Since    time.Time `json:"since"`
		Refused  uint64    `json:"refused"`
		Reason   string    `json:"reason"`
		Prepared uint64    `json:"prepared"`
	} `json:"instances"`
	// Rollout is how far the slot's newest candidate (or desired
	// generation) has reached the live instances; nil when the store has
	// none.
	Rollout *Rollout `json:"rollout"`
}

// Rollout is a slot generation's way to the live instances: preparing,
// swapping, done, refused or superseded.
type Rollout struct {
	ID         string   `json:"id"`
	Generation uint64   `json:"generation"`
	State      string   `json:"state"`
	Done       bool     `json:"done"`
	Pending    []string `json:"pending"`
	Ready      []string `json:"ready"`
	Refused    []struct {
		Instance string `json:"instance"`
		Reason   string `json:"reason"`
	} `json:"refused"`
	By       string     `json:"by"`
	Code     string     `json:"code"`
	Reason   string     `json:"reason"`
	Deadline *time.Time `json:"deadline"`
}

// GenerationCounts are a kept generation's counters: its served calls by
// outcome and their latency (P50Ms, P99Ms: the bounds of the buckets
// holding them, nil when none or above the last bound), with the probes
// counted apart.
type GenerationCounts struct {
	Calls          uint64            `json:"calls"`
	Outcomes       map[string]uint64 `json:"outcomes"`
	LatencyMsTotal float64           `json:"latency_ms_total"`
	P50Ms          *float64          `json:"p50_ms"`
	P99Ms          *float64          `json:"p99_ms"`
	Probes         uint64            `json:"probes"`
	Instances      []string          `json:"instances"`
}

// SlotList is every plugin slot.
type SlotList struct {
	Answer
	Slots []Slot `json:"slots"`
}

// Slots lists the plugin slots (GET /admin/v1/slots).
func (c *Client) Slots(ctx context.Context) (*SlotList, error) {
	return call[SlotList](ctx, c, Request{Method: http.MethodGet, Path: "/admin/v1/slots"}, "")
}

// Slot reads a plugin slot.
func (c *Client) Slot(ctx context.Context, name string) (*Slot, error) {
	return call[Slot](ctx, c, Request{Method: http.MethodGet, Path: "/admin/v1/slots/" + PathID(name)}, "")
}

// InstallSlot uploads module as the slot's next generation, pinned to the
// hex digest pin, configured by config (compact JSON, or empty); Status
// 201 is a new slot, 202 a candidate not every live instance serves yet
// (Rollout says how far it is). wait above 0 waits up to that long until
// every live instance serves it or one refuses it (?wait=); 0 answers once
// the answering instance has answered the candidate.
func (c *Client) InstallSlot(ctx context.Context, name, pin string, module []byte, config string, wait time.Duration) (*Slot, error) {
	header := http.Header{}
	if config != "" {
		header.Set("Warden-Config", config)
	}
	q := url.Values{"sha256": {pin}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	r := Request{Method: http.MethodPut, Path: "/admin/v1/slots/" + PathID(name), Query: q,
		Body: module, ContentType: "application/wasm", Header: header}
	return call[Slot](ctx, c, r, "the answer to the install")
}

// RollbackSlot serves a kept generation of the slot again as its next
// generation: to, or with 0 the kept one before the desired one; wait as
// InstallSlot's.
func (c *Client) RollbackSlot(ctx context.Context, name string, to uint64, wait time.Duration) (*Slot, error) {
	q := url.Values{}
	if to > 0 {
		q.Set("to", strconv.FormatUint(to, 10))
	}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	if len(q) == 0 {
		q = nil
	}
	return call[Slot](ctx, c, Request{Method: http.MethodPost, Path: "/admin/v1/slots/" + PathID(name) + "/rollback", Query: q}, "")
}

// Instance is an instance serving the API, and its lease.
type Instance struct {
	ID         string    `json:"id"`
	LeaseUntil time.Time `json:"lease_until"`
	Sessions   int       `json:"sessions"`
	Self       bool      `json:"self"`
}

// InstanceList is every instance of the store.
type InstanceList struct {
	Answer
	Instances []Instance `json:"instances"`
}

// Instances lists the instances (GET /admin/v1/instances).
func (c *Client) Instances(ctx context.Context) (*InstanceList, error) {
	return call[InstanceList](ctx, c, Request{Method: http.MethodGet, Path: "/admin/v1/instances"}, "")
}

// The tenant's plugins and skills: tenant names the tenant an admin key
// acts for ("" for a tenant key's own).

// PluginVersion is one version of a tenant plugin.
type PluginVersion struct {
	Version      string    `json:"version"`
	Ref          string    `json:"ref"`
	Digest       string    `json:"digest"`
	Role         string    `json:"role"`
	Capabilities []string  `json:"capabilities"`
	InstalledBy  string    `json:"installed_by"`
	Installed    time.Time `json:"installed"`
	Status       string    `json:"status"`
	AttachedBy   []string  `json:"attached_by"`
}

// Plugin is a tenant plugin and its versions.
type Plugin struct {
	Answer
	Name     string          `json:"name"`
	Tenant   string          `json:"tenant"`
	Versions []PluginVersion `json:"versions"`
}

// PluginList is the tenant's plugins.
type PluginList struct {
	Answer
	Plugins []Plugin `json:"plugins"`
}

// Plugins lists the tenant's plugins (GET /v1/plugins).
func (c *Client) Plugins(ctx context.Context, tenant string) (*PluginList, error) {
	return call[PluginList](ctx, c, Request{Method: http.MethodGet, Path: "/v1/plugins", Query: tenantQuery(tenant)}, "")
}

// Plugin reads one of the tenant's plugins.
func (c *Client) Plugin(ctx context.Context, name, tenant string) (*Plugin, error) {
	return call[Plugin](ctx, c, Request{Method: http.MethodGet, Path: "/v1/plugins/" + PathID(name), Query: tenantQuery(tenant)}, "")
}

// InstallPlugin installs module as the tenant's plugin name, pinned to the
// hex digest pin; Status 200 is a version installed already.
func (c *Client) InstallPlugin(ctx context.Context, name, pin string, module []byte, tenant string) (*Plugin, error) {
	q := tenantQuery(tenant)
	q.Set("sha256", pin)
	r := Request{Method: http.MethodPut, Path: "/v1/plugins/" + PathID(name), Query: q, Body: module, ContentType: "application/wasm"}
	return call[Plugin](ctx, c, r, "the answer to the install")
}

// DeletePlugin deletes every version of one of the tenant's plugins.
func (c *Client) DeletePlugin(ctx context.Context, name, tenant string) (*Plugin, error) {
	return call[Plugin](ctx, c, Request{Method: http.MethodDelete, Path: "/v1/plugins/" + PathID(name), Query: tenantQuery(tenant)}, "")
}

// Skill is a tenant's skill as the API shows it.
type Skill struct {
	Answer
	SkillKey      string     `json:"skill_key"`
	SkillName     string     `json:"skill_name"`
	SemanticDesc  string     `json:"semantic_desc"`
	SkillManual   string     `json:"skill_manual"`
	SkillContract string     `json:"skill_contract"`
	ToolNames     []string   `json:"toolNames"`
	Status        string     `json:"status"`
	Source        string     `json:"source"`
	Guards        []string   `json:"guards"`
	UpdatedBy     string     `json:"updated_by"`
	Updated       *time.Time `json:"updated"`
}

// SkillList is the tenant's skills in effect.
type SkillList struct {
	Answer
	Skills []Skill `json:"skills"`
}

// SkillUpload is the body of a skill's upload.
type SkillUpload struct {
	SkillName     string   `json:"skill_name"`
	SemanticDesc  string   `json:"semantic_desc,omitempty"`
	SkillManual   string   `json:"skill_manual"`
	SkillContract string   `json:"skill_contract"`
	ToolNames     []string `json:"toolNames"`
	Status        string   `json:"status,omitempty"`
}

// Skills lists the tenant's skills (GET /v1/skills).
func (c *Client) Skills(ctx context.Context, tenant string) (*SkillList, error) {
	return call[SkillList](ctx, c, Request{Method: http.MethodGet, Path: "/v1/skills", Query: tenantQuery(tenant)}, "")
}

// Skill reads one of the tenant's skills.
func (c *Client) Skill(ctx context.Context, key, tenant string) (*Skill, error) {
	return call[Skill](ctx, c, Request{Method: http.MethodGet, Path: "/v1/skills/" + PathID(key), Query: tenantQuery(tenant)}, "")
}

// PutSkill uploads a skill; Status 201 is a new one.
func (c *Client) PutSkill(ctx context.Context, key string, up SkillUpload, tenant string) (*Skill, error) {
	if up.ToolNames == nil {
		up.ToolNames = []string{}
	}
	return call[Skill](ctx, c, JSONRequest(http.MethodPut, "/v1/skills/"+PathID(key), tenantQuery(tenant), up), "the answer to the upload")
}

// DeleteSkill deletes an uploaded skill.
func (c *Client) DeleteSkill(ctx context.Context, key, tenant string) (*Skill, error) {
	return call[Skill](ctx, c, Request{Method: http.MethodDelete, Path: "/v1/skills/" + PathID(key), Query: tenantQuery(tenant)}, "")
}
