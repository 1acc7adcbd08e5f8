// Package server is Warden's HTTP API: tenants open sessions, post user
// messages, answer what a suspended task asks (a follow-up, an approval, a
// verification), read a task's trace and follow its progress as
// server-sent events; the platform's admin installs, lists and rolls back
// generations of plugin slots.
//
// Routes (tenant key):
//
//	POST /v1/sessions                                   open a session
//	GET  /v1/sessions                                   the tenant's sessions, newest first (?limit=, ?after=)
//	GET  /v1/sessions/{session}                         the session and its tasks
//	POST /v1/sessions/{session}/messages                {"text"}: run a task
//	GET  /v1/sessions/{session}/events                  server-sent events (Last-Event-ID or ?after=)
//	GET  /v1/sessions/{session}/tasks/{task}            a task
//	GET  /v1/sessions/{session}/tasks/{task}/trace      its trace events
//	POST /v1/sessions/{session}/tasks/{task}/follow-up  {"answer"}
//	POST /v1/sessions/{session}/tasks/{task}/verify     {"took": true|false}, or {} for the verify tool
//	POST /v1/sessions/{session}/tasks/{task}/resume     run on a task a dead process left RUNNING
//	GET  /v1/approvals/{approval}                       a held approval
//	POST /v1/approvals/{approval}                       {"decision": "CONFIRM"|"REJECT"|"CANCEL"}
//
// and (admin key) GET /admin/v1/slots, GET /admin/v1/slots/{slot},
// PUT /admin/v1/slots/{slot} (JSON with the module in base64, or the
// module as application/wasm with ?sha256= and a Warden-Config header),
// POST /admin/v1/slots/{slot}/rollback; /healthz and /readyz need no key.
//
// Every request but /healthz and /readyz carries "Authorization: Bearer
// <key>". A tenant key reaches only that tenant's sessions and approvals: a
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
