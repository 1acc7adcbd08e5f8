// Package state holds one session's runtime state for the loop: the
// session, its tasks and nodes (status, suspension, messages, outputs,
// scratch, counters), the evidence, the write ledger, the approvals, the
// fingerprints, the entity index and the shared values.
//
// Plugins never see the store. The loop asks it for the abi state views of
// a node (Views), hands them to the guards and builtins, and gives back what
// they asked for as effects (Apply), which the store validates and applies
// all or nothing: a call whose effects cannot all be applied changes
// nothing. The store is also where a write held by the WriteGate is kept
// (Gate) and where the user's CONFIRM is bound to the held arguments'
// digest (Approve), so that what the user saw is what runs.
//
// Store is the interface. Rules implements it once, every rule of the
// state, over a Storage: reads and writes of records in one transaction,
// without a rule. Memory is the Rules over records kept in the process;
// the SQLite and PostgreSQL store (internal/store/sqlstore) is the Rules
// over database rows.
package state
