// Package sqltest opens throwaway sqlstore databases for the tests of
// other packages: SQLite in a temporary directory always, PostgreSQL in a
// schema of its own when WARDEN_TEST_POSTGRES_URL names a database (the
// schema is dropped when the test ends).
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/agentwarden/warden/internal/store/sqlstore"
)

// PostgresURL is the environment variable naming the test database.
const PostgresURL = "WARDEN_TEST_POSTGRES_URL"

// Dialects are the dialects a test can run on here: SQLite, and
// PostgreSQL when PostgresURL is set.
func Dialects() []sqlstore.Dialect {
	if os.Getenv(PostgresURL) == "" {
		return []sqlstore.Dialect{sqlstore.SQLite}
	}
	return []sqlstore.Dialect{sqlstore.SQLite, sqlstore.Postgres}
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

// DSN returns the DSN of a new, empty database of the dialect; it skips
// the test for PostgreSQL without PostgresURL.
func DSN(t testing.TB, d sqlstore.Dialect) string {
	t.Helper()
	if d == sqlstore.SQLite {
		return filepath.Join(t.TempDir(), "warden.db")
	}
	base := os.Getenv(PostgresURL)
	if base == "" {
		t.Skip(PostgresURL + " is not set: skipping the PostgreSQL case")
	}
	adminOnce.Do(func() { admin, adminErr = sql.Open("pgx", base) })
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "warden_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens a new, empty database of the dialect, closed when the test
// ends.
func Open(t testing.TB, d sqlstore.Dialect) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), d, DSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
