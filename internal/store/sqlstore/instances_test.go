package sqlstore_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

// Instances lists every instance that held a lease, its lease (zero once
// released) and the sessions it owns, on both dialects.
func TestInstances(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqlstore.Open(ctx, d.d, d.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got, err := db.Instances(ctx); err != nil || len(got) != 0 || got == nil {
				t.Fatalf("no instances yet: %#v, %v", got, err)
			}
			until := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			for _, in := range []string{"warden-b", "warden-a"} {
				if err := db.Heartbeat(ctx, in, until); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range []store.Session{{ID: "s1", Tenant: "acme", Owner: "warden-a"}, {ID: "s2", Tenant: "acme", Owner: "warden-a"},
				{ID: "s3", Tenant: "beta", Owner: "warden-b"}} {
				s.Created = until
				if err := db.CreateSession(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Release(ctx, "warden-b"); err != nil {
				t.Fatal(err)
			}
			got, err := db.Instances(ctx)
			want := []store.Instance{{ID: "warden-a", LeaseUntil: until, Sessions: 2}, {ID: "warden-b", Sessions: 1}}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("instances = %+v, %v, want %+v", got, err, want)
			}
		})
	}
}
