package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/loop"
)

// Error codes of the API. They are stable: clients branch on them.
const (
	CodeUnauthorized       = "unauthorized"         // 401: no or unknown bearer key
	CodeForbidden          = "forbidden"            // 403: a tenant key on the admin API
	CodePlatformUntrusted  = "platform_untrusted"   // 403: login identity headers on a key that is not a trusted gateway's
	CodeBadJSON            = "bad_json"             // 400: the body is not one JSON value
	CodeUnknownField       = "unknown_field"        // 400: the body has a field the endpoint does not take
	CodeInvalidBody        = "invalid_body"         // 400: the body has a key twice, or a key in another case than the field's
	CodeInvalidRequest     = "invalid_request"      // 400: a field is missing or out of range
	CodeBodyTooLarge       = "body_too_large"       // 413
	CodeNotFound           = "not_found"            // 404: no such route
	CodeSessionNotFound    = "session_not_found"    // 404: unknown or another tenant's session
	CodeTaskNotFound       = "task_not_found"       // 404
	CodeApprovalNotFound   = "approval_not_found"   // 404: unknown or another tenant's approval
	CodeSlotNotFound       = "slot_not_found"       // 404
	CodeFeedbackOff        = "feedback_off"         // 404: no feedback store is configured
	CodeTenantNotFound     = "tenant_not_found"     // 404: an admin key's ?tenant= names no tenant
	CodePluginNotFound     = "plugin_not_found"     // 404: no such plugin of the tenant (another tenant's included)
	CodeSkillNotFound      = "skill_not_found"      // 404: no such skill of the tenant
	CodeRegistryOff        = "registry_off"         // 404: the server keeps no tenant plugins or skills
	CodePluginAttached     = "plugin_attached"      // 409: the plugin is attached by skills; the message names them
	CodeVersionExists      = "version_exists"       // 409: the plugin version is installed with another module
	CodeSkillFromFiles     = "skill_from_files"     // 409: DELETE of a skill from the skill directory; upload it INACTIVE
	CodeNotWasm            = "not_wasm"             // 400: the module is not WebAssembly
	CodeSkillInvalid       = "skill_invalid"        // 400: the skill does not load for the tenant; the message lists every problem
	CodeCapabilityDenied   = "capability_denied"    // 422: the module asks for capabilities the tenant may not have
	CodeToolsUnavailable   = "tools_unavailable"    // 502: the MCP servers could not be listed to check a skill
	CodeSessionBusy        = "session_busy"         // 409: another request is running the session
	CodeSessionElsewhere   = "session_elsewhere"    // 409: another live instance serves the session
	CodeNoVerifyTool       = "no_verify_tool"       // 409: the write has no verify tool; answer took instead
	CodeVerifyTooEarly     = "verify_too_early"     // 409: "not done" ({} or took false) before the write's call could have finished; Retry-After
	CodeNotInterrupted     = "not_interrupted"      // 409: resume of a task that is not RUNNING
	CodeTaskPending        = "task_pending"         // 409: a task waits for the user; answer it first
	CodeNotSuspended       = "not_suspended"        // 409: the task does not wait for that answer
	CodeApprovalUsed       = "approval_used"        // 409: the approval was already answered
	CodeApprovalStale      = "approval_stale"       // 409: the held write is no longer the one approved
	CodeNoPrevious         = "no_previous"          // 409: rollback without a previous generation
	CodeGenerationNotFound = "generation_not_found" // 404: rollback to a generation the store does not keep
	CodeRolloutSuperseded  = "rollout_superseded"   // 409: a later install replaced the candidate before every live instance had it ready
	CodePrepareTimeout     = "prepare_timeout"      // 409: a live instance did not prepare the candidate by its deadline
	CodeDigestMismatch     = "digest_mismatch"      // 422: the module does not match its sha256 pin
	CodePluginRejected     = "plugin_rejected"      // 422: the candidate failed verify, compile, config or start
	CodeSelfTestFailed     = "self_test_failed"     // 422: the candidate failed its self-test
	CodeTenantRateLimited  = "tenant_rate_limited"  // 429: the tenant sent more requests than its rate (Limits.Rate); Retry-After
	CodeTenantSessionLimit = "tenant_session_limit" // 429: the tenant has Limits.MaxSessions sessions open; Retry-After when one will close
	CodeTenantRunLimit     = "tenant_run_limit"     // 429: the tenant has Limits.MaxRuns runs in flight; Retry-After: 1
	CodeSetupFailed        = "setup_failed"         // 500: the session's agent could not be assembled
	CodeRunFailed          = "run_failed"           // 500: the runtime failed (store, setup); not the model provider. The message says what failed and names the request id
	CodeInternal           = "internal"             // 500

	// The model provider failed while the task ran. The task is FAILED
	// with the provider's message as its reason.
	CodeModelAuthFailed     = "model_auth_failed"        // 502: the provider refused Warden's API key (not the caller's)
	CodeModelRateLimited    = "model_rate_limited"       // 429: the provider throttled; Retry-After when it said
	CodeModelQuota          = "model_quota_exhausted"    // 502: Warden's provider account has no quota or credit left; retrying cannot help
	CodeContextLength       = "context_length_exceeded"  // 422: the conversation exceeds the model's context window
	CodeModelUnavailable    = "model_unavailable"        // 502: 5xx, unreachable, or a cut stream after the retries
	CodeModelMalformed      = "model_malformed_response" // 502: the reply is not a chat completion
	CodeModelRequestRefused = "model_request_rejected"   // 502: the provider refused the request as sent (configuration)
	CodeModelTimeout        = "model_timeout"            // 504: the model call ran out of time
)

// CodeCapabilityNotGranted (403): an installed module asks for
// capabilities its slot does not allow; the message names what it asked
// for and what the slot allows.
const CodeCapabilityNotGranted = "capability_not_granted"

// ErrSelfTest: a candidate generation failed the server's self-test.
var ErrSelfTest = errors.New("server: candidate self-test failed")

// ErrOverBudget: one instance of a candidate holds more linear memory than
// the process's whole plugin instance budget.
var ErrOverBudget = errors.New("server: candidate over the instance budget")

// ErrConfig: the server's Options are incomplete or inconsistent.
var ErrConfig = errors.New("server: invalid options")

// ErrSidecar: a plugin directory's <name>.json is not a valid sidecar.
var ErrSidecar = errors.New("server: invalid plugin sidecar")

// ErrSlotRole: a candidate's role or phases do not fit its first-party slot
// (a builtin module dropped as a guard's file, say).
var ErrSlotRole = errors.New("server: candidate does not fit its slot")

// apiError is an error the API reports as it is.
type apiError struct {
	status  int
	code    string
	message string
	// retryAfter, when set, is sent as Retry-After by a run's answer.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func fail(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

var (
	errSessionNotFound  = fail(http.StatusNotFound, CodeSessionNotFound, "no such session")
	errTaskNotFound     = fail(http.StatusNotFound, CodeTaskNotFound, "no such task")
	errApprovalNotFound = fail(http.StatusNotFound, CodeApprovalNotFound, "no such approval")
	errSessionBusy      = fail(http.StatusConflict, CodeSessionBusy, "another request is running this session")
)

// modelFailures maps a provider failure's kind to the API's answer.
var modelFailures = []struct {
	kind   error
	status int
	code   string
}{
	{model.ErrAuth, http.StatusBadGateway, CodeModelAuthFailed},
	{model.ErrRateLimited, http.StatusTooManyRequests, CodeModelRateLimited},
	{model.ErrQuota, http.StatusBadGateway, CodeModelQuota},
	{model.ErrContextLength, http.StatusUnprocessableEntity, CodeContextLength},
	{model.ErrUnavailable, http.StatusBadGateway, CodeModelUnavailable},
	{model.ErrMalformed, http.StatusBadGateway, CodeModelMalformed},
	{model.ErrBadRequest, http.StatusBadGateway, CodeModelRequestRefused},
	{model.ErrTimeout, http.StatusGatewayTimeout, CodeModelTimeout},
}

// modelFailure is the API error of a run that stopped because the model
// provider failed, or nil when err is no provider failure. The message is
// the provider's error (the API key is redacted from it already). For a
// rate limit, retryAfter is the wait the provider asked for.
func modelFailure(err error) (ae *apiError, retryAfter time.Duration) {
	var pe *model.ProviderError
	if !errors.As(err, &pe) {
		return nil, 0
	}
	for _, f := range modelFailures {
		if errors.Is(pe, f.kind) {
			if f.kind == model.ErrRateLimited {
				retryAfter = pe.RetryAfter
			}
			return fail(f.status, f.code, pe.Error()), retryAfter
		}
	}
	return nil, 0
}

// runFailures name, by its sentinel, what failed when a run stopped on
// an error that is not the provider's answer. Only these texts reach the
// client: an error's own text may quote arguments, tool results or a
// connection string.
var runFailures = []struct {
	err  error
	what string
}{
	{context.DeadlineExceeded, "the run exceeded its time limit (run-timeout)"},
	{context.Canceled, "the run was cancelled"},
	{model.ErrInvalidRequest, "the request for the model was invalid before it was sent"},
	{loop.ErrModel, "the model call failed without an answer from the provider"},
	{loop.ErrUnknownSkill, "a node names a skill the agent does not have"},
	{store.ErrOwned, "another instance took the session over"},
	{store.ErrNotFound, "the session store failed"},
	{store.ErrExists, "the session store failed"},
	{store.ErrInvalid, "the session store failed"},
	{state.ErrNotFound, "the task's state is inconsistent"},
	{state.ErrInvalidEffect, "a plugin's effect could not be applied"},
	{state.ErrUnknownEffect, "a plugin's effect could not be applied"},
	{host.ErrClosed, "a plugin was closed while the task ran"},
}

// runFailure says what failed, safe to show: the first matching kind,
// with the validation detail of an invalid model request (indexes, call
// ids and tool names only).
func runFailure(err error) string {
	for _, f := range runFailures {
		if !errors.Is(err, f.err) {
			continue
		}
		if f.err == model.ErrInvalidRequest {
			if _, detail, ok := strings.Cut(err.Error(), model.ErrInvalidRequest.Error()+": "); ok {
				return f.what + " (" + bounded(detail, 200) + ")"
			}
		}
		return f.what
	}
	return "an internal error of the runtime"
}

// bounded keeps the first n bytes of s, whole characters, marking a cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// setRetryAfter sends d as Retry-After in whole seconds, rounded up; zero
// sends nothing.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
}
