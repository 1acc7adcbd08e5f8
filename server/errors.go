package server

import (
	"errors"
	"net/http"
)

// Error codes of the API. They are stable: clients branch on them.
const (
	CodeUnauthorized     = "unauthorized"       // 401: no or unknown bearer key
	CodeForbidden        = "forbidden"          // 403: a tenant key on the admin API
	CodeBadJSON          = "bad_json"           // 400: the body is not one JSON value
	CodeUnknownField     = "unknown_field"      // 400: the body has a field the endpoint does not take
	CodeInvalidRequest   = "invalid_request"    // 400: a field is missing or out of range
	CodeBodyTooLarge     = "body_too_large"     // 413
	CodeNotFound         = "not_found"          // 404: no such route
	CodeSessionNotFound  = "session_not_found"  // 404: unknown or another tenant's session
	CodeTaskNotFound     = "task_not_found"     // 404
	CodeApprovalNotFound = "approval_not_found" // 404: unknown or another tenant's approval
	CodeSlotNotFound     = "slot_not_found"     // 404
	CodeSessionBusy      = "session_busy"       // 409: another request is running the session
	CodeSessionElsewhere = "session_elsewhere"  // 409: another live instance serves the session
	CodeNoVerifyTool     = "no_verify_tool"     // 409: the write has no verify tool; answer took instead
	CodeNotInterrupted   = "not_interrupted"    // 409: resume of a task that is not RUNNING
	CodeTaskPending      = "task_pending"       // 409: a task waits for the user; answer it first
	CodeNotSuspended     = "not_suspended"      // 409: the task does not wait for that answer
	CodeApprovalUsed     = "approval_used"      // 409: the approval was already answered
	CodeApprovalStale    = "approval_stale"     // 409: the held write is no longer the one approved
	CodeNoPrevious       = "no_previous"        // 409: rollback without a previous generation
	CodeDigestMismatch   = "digest_mismatch"    // 422: the module does not match its sha256 pin
	CodePluginRejected   = "plugin_rejected"    // 422: the candidate failed verify, compile, config or start
	CodeSelfTestFailed   = "self_test_failed"   // 422: the candidate failed its self-test
	CodeSetupFailed      = "setup_failed"       // 500: the session's agent could not be assembled
	CodeRunFailed        = "run_failed"         // 500: the runtime failed (model, store)
	CodeInternal         = "internal"           // 500
)

// ErrSelfTest: a candidate generation failed the server's self-test.
var ErrSelfTest = errors.New("server: candidate self-test failed")

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
