// Package server is Warden's HTTP API: tenants open sessions, post user
// messages, answer what a suspended task asks (a follow-up, an approval, a
// verification), read a task's trace and follow its progress as
// server-sent events; the platform's admin installs, lists and rolls back
// generations of plugin slots.
//
// Every request but /healthz and /readyz carries "Authorization: Bearer
// <key>". A tenant key reaches only that tenant's sessions and approvals: a
// foreign id answers 404 exactly like an unknown one, so ids never leak.
// Errors are JSON, {"error":{"code":"...","message":"..."}}, with a stable
// code (see errors.go); a request that fails changes nothing.
//
// Approvals are held by the server. When a task suspends for APPROVAL the
// server records the gated call and the digest of its bound arguments under a
// fresh id; the client answers that id with CONFIRM, REJECT or CANCEL and
// nothing else: it can never assert arguments or a digest. An approval is
// answered once; the digest is checked again against the held write before
// the decision is applied.
package server
