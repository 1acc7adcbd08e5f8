package sqlstore

import "errors"

// ErrSchemaTooNew: the database was migrated by a newer Warden than this
// one; opening it could corrupt what the newer code wrote.
var ErrSchemaTooNew = errors.New("database schema is newer than this build")

// ErrDialect: a dialect other than SQLite or Postgres.
var ErrDialect = errors.New("unknown dialect")
