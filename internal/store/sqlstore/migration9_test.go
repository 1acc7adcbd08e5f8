package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

// TestMigrationSessionStatus: migration 0009 fills the session rows of a
// database written before it with their latest task's status and last
// activity, so that the listing filtered by status sees them.
func TestMigrationSessionStatus(t *testing.T) {
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
			ctx := context.Background()
			dsn := tt.dsn(t)
			db, err := sqlstore.Open(ctx, tt.d, dsn)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			for i, id := range []string{"s_a", "s_b", "s_c"} {
				if err := db.CreateSession(ctx, store.Session{ID: id, Tenant: "acme", Created: at.Add(time.Duration(i) * time.Second), Owner: "i1"}); err != nil {
					t.Fatal(err)
				}
			}
			put := func(s, id string, seq int64, status string) {
				doc, _ := json.Marshal(map[string]string{"id": id, "status": status})
				if err := db.PutTask(ctx, s, store.Doc{ID: id, Seq: seq, Doc: doc}); err != nil {
					t.Fatal(err)
				}
			}
			put("s_a", "t1", 1, "DONE")
			put("s_a", "t2", 2, "FAILED")
			put("s_b", "t1", 1, "SUSPENDED")
			if err := db.AppendEvent(ctx, "s_a", store.Doc{Seq: 1, Doc: json.RawMessage(`{"seq":1,"time":"2026-01-02T03:05:00Z"}`)}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			// The database as it was before 0009 (and what follows it).
			driver := map[sqlstore.Dialect]string{sqlstore.SQLite: "sqlite", sqlstore.Postgres: "pgx"}[tt.d]
			raw, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, q := range []string{
				`DROP INDEX api_sessions_status`, `DROP INDEX api_sessions_status_all`,
				`ALTER TABLE api_sessions DROP COLUMN latest_seq`, `ALTER TABLE api_sessions DROP COLUMN latest_task`,
				`ALTER TABLE api_sessions DROP COLUMN status`, `ALTER TABLE api_sessions DROP COLUMN last_at`,
				`DROP TABLE slot_candidates`, `ALTER TABLE slot_status DROP COLUMN prepared`, `DROP TABLE slot_counts`,
				`DELETE FROM schema_migrations WHERE version >= 9`,
			} {
				if _, err := raw.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db, err = sqlstore.Open(ctx, tt.d, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tests := []struct {
				status []string
				want   []string
			}{
				{[]string{"FAILED"}, []string{"s_a t2 FAILED 2"}},
				{[]string{"SUSPENDED"}, []string{"s_b t1 SUSPENDED 1"}},
				{[]string{store.NoTask}, []string{"s_c   0"}},
				{[]string{"DONE"}, nil},
			}
			for _, c := range tests {
				list, err := db.SessionStates(ctx, store.SessionFilter{Tenant: "acme", Status: c.status}, store.Cursor{}, 10)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, s := range list {
					got = append(got, s.ID+" "+s.Latest+" "+s.Status+" "+string(rune('0'+s.Tasks)))
				}
				if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
					t.Errorf("%v: %q, want %q", c.status, got, c.want)
				}
			}
			list, err := db.SessionStates(ctx, store.SessionFilter{Tenant: "acme", Status: []string{"FAILED"}}, store.Cursor{}, 10)
			if err != nil || len(list) != 1 || !list[0].Last.Equal(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)) {
				t.Fatalf("last activity back-filled: %+v %v", list, err)
			}
		})
	}
}
