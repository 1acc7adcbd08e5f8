// Package server is Warden's HTTP API: tenants open sessions, post user
// messages, answer what a suspended task asks (a follow-up, an approval, a
// verification), read a task's trace and follow its progress as
// server-sent events; the platform's admin installs, lists and rolls back
// generations of plugin slots.
//
// The routes, their bodies and every answer are described in
// docs/openapi.json (OpenAPI 3.1, also served at GET /openapi.json): the
// tenant API under /v1 (sessions, messages, tasks, traces, events,
// approvals, feedback), the admin API under /admin/v1 (plugin slots,
// instances), and /healthz, /readyz and /openapi.json, which need no key.
//
// A message runs asynchronously: POST /v1/sessions/{session}/messages
// answers 202 at once with the task RUNNING and a Location naming it, and
// the run goes on without its client (follow the session's events or poll
// the task). ?wait=30s (any duration up to 5m) waits for the run and
// answers 200 with the settled task, or 202 when the run is still going.
// Answers (follow-up, verify, resume, approval decisions) wait by default
// and take ?wait= too.
//
// Every request but /healthz, /readyz and /openapi.json carries
// "Authorization: Bearer <key>". A tenant key reaches only that tenant's sessions and approvals: a
// foreign id answers 404 exactly like an unknown one, so ids never leak.
// Errors are JSON, {"error":{"code":"...","message":"..."}}, with a stable
// code (see errors.go); a request that fails changes nothing.
//
// A verify answer of "not done" — {} whose verify tool finds nothing, or
// {"took":false} — that comes before the write's call could have finished
// (the ledger entry's start plus the write's timeout) is 409
// verify_too_early with Retry-After: the tool server may still be on the
// call a dead process sent. The task keeps waiting for VERIFY; "done"
// counts at once.
//
// Approvals are held by the server. When a task suspends for APPROVAL the
// server records the gated call and the digest of its bound arguments under a
// fresh id; the client answers that id with CONFIRM, REJECT or CANCEL and
// nothing else: it can never assert arguments or a digest. An approval is
// answered once — its status moves from PENDING in one conditional update
// of the store — and the digest is checked again against the held write
// before the decision is applied.
//
// Request bodies are decoded strictly: an unknown field is 400
// unknown_field, a key given twice or in another case than its field's is
// 400 invalid_body, naming the key. Each tenant is held to Options.Limits:
// its request rate (429 tenant_rate_limited), its sessions open (429
// tenant_session_limit), its runs in flight (429 tenant_run_limit), each
// with Retry-After where a wait is known, and its tool calls in flight
// (more wait). Operator guards an operator's endpoint such as GET /metrics
// with an admin or metrics key.
//
// With a durable Options.Directory a session outlives its process and is
// served by one live instance at a time: see Options.Directory, Start and
// docs/RATIONALE.md ("Sessions across processes and instances"). Another
// instance answers 409 session_elsewhere naming the owner.
package server
