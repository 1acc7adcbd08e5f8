package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/feedback"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/loop"
)

// feedbackAt is the time of the test records: t0 plus s seconds.
func feedbackAt(s int) time.Time {
	return time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(s) * time.Second)
}

func fbRecord(at int, tenant, tool string, step int64, outcome string) feedback.Record {
	r := feedback.Record{Time: feedbackAt(at), Tenant: tenant, Session: "s-" + tenant, Task: "t1", Node: "n1",
		Step: step, Tool: tool, Outcome: outcome, Message: "msg", Status: "RUNNING"}
	switch outcome {
	case "SUCCESS":
		r.Result, r.Weight = feedback.ResultSuccess, feedback.WeightSuccess
	default:
		r.Code, r.Name, r.Category, r.Recoverable, r.Next = "agent_runtime.40016", "TOOL_TIMEOUT", "execution", true, "retry"
		r.Stalls, r.StallsAdded, r.Result, r.Weight = 1, 1, feedback.ResultRetrying, feedback.WeightRecoverable
	}
	return r
}

func TestFeedback(t *testing.T) {
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

			full := feedback.Record{
				// Not in UTC: stored and read back in UTC.
				Time:   time.Date(2026, 3, 4, 13, 6, 7, 5, time.FixedZone("CST", 8*3600)),
				Tenant: "acme", Session: "s1", Task: "t1", Node: "n1", Step: 2, Tool: "put",
				ArgsDigest: "sha256:ab", Output: `{"name":"put","arguments":{"id":"x"}}`,
				Outcome: "REJECTED", Message: "参数错误。下一步：改参数",
				Code: "agent_runtime.40014", Name: "MCP_INVALID_PARAMS", Category: "argument",
				Recoverable: true, Next: "change", Status: "RUNNING", Stalls: 2, StallsAdded: 1,
				Result: feedback.ResultRetrying, Weight: feedback.WeightRecoverable,
			}
			bad := fbRecord(3, "beta", "get", 9, "FAILED")
			bad.Message = "nul\x00 and \xff bytes"
			first := []feedback.Record{
				full,
				fbRecord(2, "acme", "get", 3, "SUCCESS"),
				fbRecord(2, "acme", "get", 4, "FAILED"), // same time as step 3: kept after it
				bad,
				fbRecord(-1, "beta", "put", 1, "SUCCESS"),
			}
			if err := db.AddFeedback(ctx, nil); err != nil {
				t.Fatalf("add none: %v", err)
			}
			if err := db.AddFeedback(ctx, first); err != nil {
				t.Fatal(err)
			}
			// A batch larger than one INSERT.
			var bulk []feedback.Record
			for i := range 450 {
				bulk = append(bulk, fbRecord(100, "bulk", "scan", int64(1000+i), "SUCCESS"))
			}
			if err := db.AddFeedback(ctx, bulk); err != nil {
				t.Fatal(err)
			}
			// A batch that fails stores nothing.
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := db.AddFeedback(cancelled, []feedback.Record{fbRecord(5, "acme", "lost", 7, "SUCCESS")}); !errors.Is(err, context.Canceled) {
				t.Fatalf("add with a cancelled context: %v", err)
			}

			all, err := db.Feedback(ctx, feedback.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 455 {
				t.Fatalf("%d records, want 455", len(all))
			}
			wantFull := full
			wantFull.Time = time.Date(2026, 3, 4, 5, 6, 7, 5, time.UTC)
			wantBad := bad
			wantBad.Message = "nul\uFFFD and \uFFFD bytes"
			// Step 1 (t0-1s) sorts first, then full (05:06:07.000000005 UTC).
			if !reflect.DeepEqual(all[1], wantFull) {
				t.Errorf("round trip:\n got %+v\nwant %+v", all[1], wantFull)
			}
			if !reflect.DeepEqual(all[4], wantBad) {
				t.Errorf("bad text:\n got %+v\nwant %+v", all[4], wantBad)
			}
			if all[5].Step != 1000 || all[454].Step != 1449 {
				t.Errorf("bulk order: first %d last %d", all[5].Step, all[454].Step)
			}

			steps := func(rs []feedback.Record) []int64 {
				out := []int64{}
				for _, r := range rs {
					if r.Tenant != "bulk" {
						out = append(out, r.Step)
					}
				}
				return out
			}
			tests := []struct {
				name  string
				f     feedback.Filter
				steps []int64
				bulk  int
			}{
				{"all", feedback.Filter{}, []int64{1, 2, 3, 4, 9}, 450},
				{"tenant", feedback.Filter{Tenant: "acme"}, []int64{2, 3, 4}, 0},
				{"tool", feedback.Filter{Tool: "put"}, []int64{1, 2}, 0},
				{"tenant and tool", feedback.Filter{Tenant: "beta", Tool: "get"}, []int64{9}, 0},
				{"since, inclusive", feedback.Filter{Since: feedbackAt(2)}, []int64{3, 4, 9}, 450},
				{"since in another zone", feedback.Filter{Since: feedbackAt(2).In(time.FixedZone("X", -5*3600))}, []int64{3, 4, 9}, 450},
				{"since a nanosecond later", feedback.Filter{Since: feedbackAt(2).Add(time.Nanosecond)}, []int64{9}, 450},
				{"everything", feedback.Filter{Tenant: "acme", Tool: "get", Since: feedbackAt(0)}, []int64{3, 4}, 0},
				{"unknown tenant", feedback.Filter{Tenant: "nobody"}, []int64{}, 0},
			}
			for _, tt := range tests {
				got, err := db.Feedback(ctx, tt.f)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if s := steps(got); !reflect.DeepEqual(s, tt.steps) || len(got)-len(s) != tt.bulk {
					t.Errorf("%s: steps %v and %d bulk, want %v and %d", tt.name, s, len(got)-len(s), tt.steps, tt.bulk)
				}
				for _, r := range got {
					if !tt.f.Match(r) {
						t.Errorf("%s: Filter.Match refuses stored %+v", tt.name, r)
					}
				}
			}
		})
	}
}

// TestFeedbackRecorder stores through a feedback.Recorder, whose batches
// interleave with another goroutine's, and reads every record back once.
func TestFeedbackRecorder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.SQLite, sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := feedback.DefaultRecorderOptions()
	o.Batch = 7
	rec, err := feedback.NewRecorder(db, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			for i := range 50 {
				if err := db.AddFeedback(ctx, []feedback.Record{fbRecord(i, fmt.Sprint("direct", g), "get", int64(i), "SUCCESS")}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for s := range 10 {
		sink := rec.Sink("acme", fmt.Sprint("s", s))
		for i := range 30 {
			sink.Emit(feedbackEvent(int64(i)))
		}
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := rec.Stats(); st != (feedback.Stats{Written: 300}) {
		t.Fatalf("stats %+v", st)
	}
	got, err := db.Feedback(ctx, feedback.Filter{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[fmt.Sprint(r.Session, "/", r.Step)] = true
	}
	if len(got) != 300 || len(seen) != 300 {
		t.Fatalf("%d records, %d distinct, want 300", len(got), len(seen))
	}
}

func feedbackEvent(seq int64) loop.Event {
	return loop.Event{Seq: seq, Task: "t1", Node: "n1", Kind: loop.KindTool, Tool: "get", Outcome: "SUCCESS", Level: "INFO"}
}
