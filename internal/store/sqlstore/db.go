package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
)

// Dialect is the SQL database a DB talks to.
type Dialect string

// Dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// busyTimeout is how long a SQLite connection waits for a lock another
// process holds before it reports SQLITE_BUSY.
const busyTimeout = 5 * time.Second

//go:embed migrations
var migrations embed.FS

// DB is one opened database with an up-to-date schema. It is safe for
// concurrent use; Session gives the Store of one session.
type DB struct {
	dialect Dialect
	db      *sql.DB
}

// Open opens the database and applies, in one transaction, every embedded
// migration it has not seen. A database migrated further than this build
// knows is refused with ErrSchemaTooNew.
//
// For SQLite dsn is a file path (a new file is created); the connection
// uses WAL, a busy timeout, foreign keys and immediate transactions, and
// the pool holds one connection, the single writer. For Postgres dsn is a
// pgx connection string or URL (a search_path parameter selects a schema).
func Open(ctx context.Context, d Dialect, dsn string) (*DB, error) {
	var (
		db  *sql.DB
		err error
	)
	switch d {
	case SQLite:
		q := fmt.Sprintf("_pragma=journal_mode(WAL)&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate",
			busyTimeout.Milliseconds())
		db, err = sql.Open("sqlite", "file:"+dsn+"?"+q)
		if err == nil {
			db.SetMaxOpenConns(1)
		}
	case Postgres:
		db, err = sql.Open("pgx", dsn)
	default:
		return nil, fmt.Errorf("sqlstore: open: %w %q", ErrDialect, d)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", d, err)
	}
	s := &DB{dialect: d, db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *DB) Close() error { return s.db.Close() }

// Dialect is the database's dialect.
func (s *DB) Dialect() Dialect { return s.dialect }

type migration struct {
	version int
	name    string
	sql     string
}

// Migrations lists the embedded migrations of a dialect in order.
func loadMigrations(d Dialect) ([]migration, error) {
	dir := path.Join("migrations", string(d))
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations of %s: %w", d, err)
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("sqlstore: migration %s: want NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(migrations, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("sqlstore: migration %s: %w", name, err)
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlstore: migration %s: versions must run 1, 2, 3, … without gaps", m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the newest migration this build knows for the dialect.
func SchemaVersion(d Dialect) (int, error) {
	ms, err := loadMigrations(d)
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

func (s *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer tx.Rollback()
	if s.dialect == Postgres {
		// Instances starting together migrate one after the other.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7268201)`); err != nil {
			return fmt.Errorf("sqlstore: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	if have > len(ms) {
		return fmt.Errorf("sqlstore: migrate: database at version %d, this build knows %d: %w", have, len(ms), ErrSchemaTooNew)
	}
	for _, m := range ms[have:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

// rebind turns the ? placeholders of a query into Postgres's $1, $2, ….
// No query of this package has a ? inside a literal.
func (s *DB) rebind(q string) string {
	if s.dialect != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
