// Package sqlstore is the durable state.Store: one implementation over
// database/sql with two dialects, SQLite (the embedded default, pure Go
// modernc.org/sqlite in WAL mode with one writer) and PostgreSQL (pgx, for
// many warden serve instances sharing one database).
//
// Open opens a database and brings its schema up to date; Session returns
// the Store of one session in it. Every Store method is one transaction,
// and Apply applies all of one call's effects in one transaction, so a
// call whose effects cannot all be applied changes nothing. A write's
// ledger entry is committed (STARTED) by its ledger.reserve effect before
// the write tool is called; a process killed between the call and its
// settle leaves it STARTED, and RecoverWrites turns it into
// UNKNOWN_PRE_CALL when the process starts again.
//
// Writes of one session are serialised: SQLite has a single connection,
// PostgreSQL locks the session's row for the length of each write
// transaction. Different sessions proceed in parallel on PostgreSQL.
//
// The rules are state.Rules, the in-memory state.Memory's, over the rows
// kept here (a state.Storage); this package is SQL only. The conformance
// suite in internal/store/storetest checks both. JSON values are kept as
// text; those nested inside a node (inputs, outputs, scratch) read back
// compacted.
package sqlstore
