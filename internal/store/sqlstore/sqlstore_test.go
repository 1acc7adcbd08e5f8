package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/storetest"
)

// postgresURL names the PostgreSQL database the Postgres tests use; each
// test works in a schema of its own in it, dropped at its end.
const postgresURL = "WARDEN_TEST_POSTGRES_URL"

// durable is a Store the conformance suite can close and reopen.
type durable struct {
	*sqlstore.Store
	db     *sqlstore.DB
	reopen func(t testing.TB) *durable
}

func (d *durable) Reopen(t testing.TB) state.Store {
	if err := d.db.Close(); err != nil {
		t.Fatal(err)
	}
	return d.reopen(t)
}

// opener returns the suite's open for a dialect and a way to name a fresh
// database.
func open(t testing.TB, d sqlstore.Dialect, dsn string) *durable {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), d, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := db.Session(context.Background(), storetest.Options())
	if err != nil {
		t.Fatal(err)
	}
	return &durable{Store: s, db: db, reopen: func(t testing.TB) *durable { return open(t, d, dsn) }}
}

func sqliteDSN(t testing.TB) string { return filepath.Join(t.TempDir(), "warden.db") }

func TestSQLite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) state.Store { return open(t, sqlstore.SQLite, sqliteDSN(t)) })
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

// postgresDSN creates a schema of its own for the test and returns a DSN
// whose search_path selects it.
func postgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(postgresURL)
	if base == "" {
		t.Skip(postgresURL + " is not set: skipping the PostgreSQL store tests (see store/sqlstore/README.md)")
	}
	adminOnce.Do(func() { admin, adminErr = sql.Open("pgx", base) })
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "warden_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", postgresURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	postgresDSN(t) // skips early without a database
	storetest.Run(t, func(t *testing.T) state.Store { return open(t, sqlstore.Postgres, postgresDSN(t)) })
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dsn := tt.dsn(t)
			ctx := context.Background()
			want, err := sqlstore.SchemaVersion(tt.d)
			if err != nil || want < 1 {
				t.Fatalf("schema version %d %v", want, err)
			}
			// Opening twice applies each migration once.
			for range 2 {
				db, err := sqlstore.Open(ctx, tt.d, dsn)
				if err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			driver := map[sqlstore.Dialect]string{sqlstore.SQLite: "sqlite", sqlstore.Postgres: "pgx"}[tt.d]
			raw, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			var n, max int
			if err := raw.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
				t.Fatal(err)
			}
			if n != want || max != want {
				t.Fatalf("schema_migrations has %d rows up to %d, want %d", n, max, want)
			}
			// A database a newer build migrated is refused.
			if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'now')`); err != nil {
				t.Fatal(err)
			}
			if _, err := sqlstore.Open(ctx, tt.d, dsn); !errors.Is(err, sqlstore.ErrSchemaTooNew) {
				t.Fatalf("open a newer database: %v", err)
			}
		})
	}
	if _, err := sqlstore.Open(context.Background(), "oracle", ""); !errors.Is(err, sqlstore.ErrDialect) {
		t.Fatalf("unknown dialect: %v", err)
	}
}

// TestSessions checks two sessions of one database do not see each other.
func TestSessions(t *testing.T) {
	t.Parallel()
	db, err := sqlstore.Open(context.Background(), sqlstore.SQLite, sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, err := db.Session(context.Background(), state.Options{SessionID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Session(context.Background(), state.Options{SessionID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CreateTask(state.Task{ID: "t1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddUserMessage("secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Task("t1"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("session b sees a's task: %v", err)
	}
	if err := b.CreateTask(state.Task{ID: "t1"}); err != nil {
		t.Fatalf("same task id in another session: %v", err)
	}
	if _, err := db.Session(context.Background(), state.Options{}); err == nil {
		t.Fatal("a session without an id")
	}
}

func TestDirectory(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunDirectory(t, func(t *testing.T) store.Directory { return open(t, tt.d, tt.dsn(t)).db })
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunRegistry(t, func(t *testing.T) store.Registry { return open(t, tt.d, tt.dsn(t)).db })
		})
	}
}

func TestSlotCounters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunSlotCounters(t, func(t *testing.T) storetest.SlotStore { return open(t, tt.d, tt.dsn(t)).db })
		})
	}
}

func TestSlotControl(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunSlotControl(t, func(t *testing.T) store.SlotControl { return open(t, tt.d, tt.dsn(t)).db })
		})
	}
}
