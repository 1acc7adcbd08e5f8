// Package store defines what the HTTP service keeps about its sessions
// beside their runtime state (loop/state.Store): which tenant a session
// belongs to and which instance serves it, the tasks, approvals and trace
// events the API shows, and the leases of the instances sharing one
// database.
//
// A Directory has three implementations: Memory here (one process, nothing
// survives it), and sqlstore's DB on SQLite (one instance) and PostgreSQL
// (many instances). storetest.RunDirectory is their one conformance suite.
//
// Documents (tasks, approvals, events) are the service's JSON, kept as
// given and returned byte for byte; the store indexes only the fields it
// must query by.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Sentinels.
var (
	// ErrNotFound: no session, task or approval with that id.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: a session or approval id is already taken.
	ErrExists = errors.New("store: already exists")
	// ErrOwned: the session is served by another instance that is alive.
	ErrOwned = errors.New("store: session is owned by another live instance")
	// ErrInvalid: a record is missing a required field or its document is
	// not JSON.
	ErrInvalid = errors.New("store: invalid record")
)

// Session is a session as the service knows it.
type Session struct {
	ID      string
	Tenant  string
	Created time.Time
	// Owner is the instance that serves the session.
	Owner string
}

// Instance is a serving instance as the directory knows it: its lease
// (zero once released), how many sessions it owns and the address its
// peers reach it at (empty until it advertises one).
type Instance struct {
	ID         string
	LeaseUntil time.Time
	Sessions   int
	Addr       string
}

// Cursor is where a listing of sessions goes on: after the session with
// this creation time and id.
type Cursor struct {
	Created time.Time
	ID      string
}

// Doc is one stored document of a session: an API task (ID, with Seq its
// order) or a trace event (Seq).
type Doc struct {
	ID  string
	Seq int64
	Doc json.RawMessage
}

// Approval is a server-held approval: the fields the store queries by and
// the service's document.
type Approval struct {
	ID      string
	Tenant  string
	Session string
	Node    string
	// Status is PENDING until it moves, once, to a decision or STALE.
	Status string
	Doc    json.RawMessage
}

// Directory is the service's store.
type Directory interface {
	// CreateSession records a new session; its id must be new.
	CreateSession(ctx context.Context, s Session) error
	// LookupSession returns a session, ErrNotFound when there is none.
	LookupSession(ctx context.Context, id string) (Session, error)
	// Sessions returns up to limit of a tenant's sessions, newest first
	// (by Created, then ID), after the cursor: the zero Cursor starts at
	// the newest.
	Sessions(ctx context.Context, tenant string, after Cursor, limit int) ([]Session, error)
	// Claim makes owner the owner of the session when it already is, or
	// when the current owner is not alive at now (its lease ran out, or it
	// released it). It returns the previous owner; ErrOwned (wrapped with
	// the owner's name) when a live instance holds the session.
	Claim(ctx context.Context, id, owner string, now time.Time) (prev string, err error)

	// PutTask inserts or replaces an API task of a session.
	PutTask(ctx context.Context, session string, t Doc) error
	// Tasks returns a session's tasks in Seq order.
	Tasks(ctx context.Context, session string) ([]Doc, error)

	// AddApproval records a new approval.
	AddApproval(ctx context.Context, a Approval) error
	// Approval returns an approval, ErrNotFound when there is none.
	Approval(ctx context.Context, id string) (Approval, error)
	// Approvals returns a session's approvals in the order they were added.
	Approvals(ctx context.Context, session string) ([]Approval, error)
	// MoveApproval changes an approval's status from from to to, with its
	// new document, in one conditional step; false (and no change) when
	// its status was not from. This is what makes an approval single-use
	// across instances.
	MoveApproval(ctx context.Context, id, from, to string, doc json.RawMessage) (bool, error)

	// AppendEvent adds a trace event; its Seq must be new in the session.
	AppendEvent(ctx context.Context, session string, e Doc) error
	// Events returns a session's events after seq, in Seq order.
	Events(ctx context.Context, session string, after int64) ([]Doc, error)

	// Heartbeat records that instance is alive until until.
	Heartbeat(ctx context.Context, instance string, until time.Time) error
	// Release ends the instance's lease: its sessions may be claimed at
	// once (a graceful shutdown).
	Release(ctx context.Context, instance string) error
	// ReleaseOthers ends the lease of every instance but this one: the
	// one-instance SQLite deployment, where whoever held the database
	// before is gone.
	ReleaseOthers(ctx context.Context, instance string) error
	// Advertise records the address (HOST:PORT) at which the instance's
	// peers reach it, beside its lease; it replaces the one recorded
	// before.
	Advertise(ctx context.Context, instance, addr string) error
	// LookupInstance returns an instance's lease and address (Sessions is
	// not counted), ErrNotFound for one that never beat or advertised.
	LookupInstance(ctx context.Context, instance string) (Instance, error)
}
