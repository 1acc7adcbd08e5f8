package sqlstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/sqlstore"
)

// TestGenerationLog records a slot's installs, refusals and rollback on
// each dialect, reads them back in order after a reopen, and refuses
// records the log cannot hold.
func TestGenerationLog(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CST", 8*3600))
	records := []server.GenerationRecord{
		{Slot: "WriteGate", Event: server.GenerationInstalled, Number: 1, Ref: "writegate@1.0.0", Digest: "aa",
			Origin: server.OriginStart, File: "writegate.wasm", Instance: "i1", Time: at},
		{Slot: "env", Event: server.GenerationInstalled, Number: 1, Ref: "builtin.env@1.0.0", Digest: "ee",
			Origin: server.OriginStart, File: "env.wasm", Instance: "i1", Time: at},
		{Slot: "WriteGate", Event: server.GenerationRefused, Digest: "bb", Reason: "host: compile: bad \xff\x00 module",
			Origin: server.OriginWatch, File: "writegate.wasm", Instance: "i2", Time: at.Add(time.Second)},
		{Slot: "WriteGate", Event: server.GenerationInstalled, Number: 2, Ref: "writegate@1.0.1", Digest: "cc",
			Origin: server.OriginAdmin, Instance: "i1", Time: at.Add(2 * time.Second)},
		{Slot: "WriteGate", Event: server.GenerationRolledBack, Number: 3, Ref: "writegate@1.0.0", Digest: "aa",
			Origin: server.OriginAdmin, Instance: "i1", Time: at.Add(3 * time.Second)},
	}
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
			if got, err := db.Generations(ctx, "WriteGate"); err != nil || len(got) != 0 {
				t.Fatalf("empty log: %v %v", got, err)
			}
			for _, r := range records {
				if err := db.RecordGeneration(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, bad := range []struct {
				name string
				r    server.GenerationRecord
				msg  string
			}{
				{"no slot", server.GenerationRecord{Event: server.GenerationInstalled}, "sqlstore: record generation: no slot: store: invalid record"},
				{"unknown event", server.GenerationRecord{Slot: "env", Event: "swapped"}, `sqlstore: record generation of env: event "swapped": store: invalid record`},
			} {
				err := db.RecordGeneration(ctx, bad.r)
				if !errors.Is(err, store.ErrInvalid) || err.Error() != bad.msg {
					t.Fatalf("%s: %v, want %s", bad.name, err, bad.msg)
				}
			}
			db.Close()
			db, err = sqlstore.Open(ctx, tt.d, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, slot := range []string{"WriteGate", "env", "ArgPolicy"} {
				var want []server.GenerationRecord
				for _, r := range records {
					if r.Slot == slot {
						r.Time = r.Time.UTC()
						if r.Event == server.GenerationRefused {
							r.Reason = "host: compile: bad \uFFFD\uFFFD module"
						}
						want = append(want, r)
					}
				}
				got, err := db.Generations(ctx, slot)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d records, want %d: %+v", slot, len(got), len(want), got)
				}
				for i := range want {
					if !got[i].Time.Equal(want[i].Time) || got[i].Time.Location() != time.UTC {
						t.Fatalf("%s #%d: time %v, want %v in UTC", slot, i, got[i].Time, want[i].Time)
					}
					got[i].Time, want[i].Time = time.Time{}, time.Time{}
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%s #%d:\n got %+v\nwant %+v", slot, i, got[i], want[i])
					}
				}
			}
		})
	}
}
