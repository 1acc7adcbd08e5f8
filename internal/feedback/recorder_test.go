package feedback

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/loop"
)

// memStore is a Store in memory. While gate is set, AddFeedback signals
// entered and waits for gate, so a test can hold the Recorder's goroutine
// in the middle of a batch; fail makes AddFeedback fail.
type memStore struct {
	mu      sync.Mutex
	recs    []Record
	batches []int
	fail    error
	entered chan struct{}
	gate    chan struct{}
}

func (m *memStore) AddFeedback(ctx context.Context, recs []Record) error {
	m.mu.Lock()
	gate, entered := m.gate, m.entered
	m.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batches = append(m.batches, len(recs))
	if m.fail != nil {
		return m.fail
	}
	m.recs = append(m.recs, recs...)
	return nil
}

func (m *memStore) Feedback(ctx context.Context, f Filter) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, r := range m.recs {
		if f.Match(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entered, m.gate = make(chan struct{}), make(chan struct{})
}

func (m *memStore) release() {
	m.mu.Lock()
	g := m.gate
	m.gate = nil
	m.mu.Unlock()
	close(g)
}

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func newRecorder(t *testing.T, st Store, queue, batch int) (*Recorder, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	o := DefaultRecorderOptions()
	o.Queue, o.Batch, o.Now = queue, batch, fixedNow
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	r, err := NewRecorder(st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r, &logs
}

func TestRecorderStores(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	r, logs := newRecorder(t, st, 16, 3)
	a, b := r.Sink("acme", "s1"), r.Sink("beta", "s2")
	a.Digest = func(e loop.Event) string { return "sha256:" + e.Tool }
	a.Output = func(e loop.Event) string { return `{"name":"` + e.Tool + `"}` }
	st.hold() // the first batch waits, so the rest queue behind it
	a.Emit(tool(1, "n1", "get", "FAILED", "agent_runtime.40016", 1, "RUNNING"))
	<-st.entered
	a.Emit(loop.Event{Seq: 2, Task: "t1", Node: "n1", Kind: loop.KindTool, Tool: "get", Status: "SKIPPED", Stalls: 1})
	// b keeps the default Digest and Output: the event's own.
	e3 := tool(3, "n1", "put", "SUCCESS", "", 0, "RUNNING")
	e3.ArgsDigest, e3.Input = "d3", `{"id":3}`
	b.Emit(e3)
	a.Emit(tool(4, "n1", "get", "SUCCESS", "", 0, "RUNNING"))
	b.Emit(tool(5, "n1", "put", "REJECTED", "MCP_INVALID_PARAMS", 1, "RUNNING"))
	a.Emit(tool(6, "n1", "get", "SUCCESS", "", 0, "RUNNING"))
	a.Emit(loop.Event{Seq: 7, Task: "t1", Node: "n1", Kind: loop.KindNode, Status: "DONE"})
	st.release()
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Stats() != (Stats{Written: 5}) || r.Err() != nil || a.Err() != nil || b.Err() != nil || logs.Len() != 0 {
		t.Fatalf("stats %+v err %v %v %v logs %q", r.Stats(), r.Err(), a.Err(), b.Err(), logs.String())
	}
	// One record, then the four queued behind it in batches of three.
	if !reflect.DeepEqual(st.batches, []int{1, 3, 1}) {
		t.Errorf("batches %v", st.batches)
	}
	got, _ := st.Feedback(context.Background(), Filter{})
	want := []Record{
		{Time: fixedNow(), Tenant: "acme", Session: "s1", Task: "t1", Node: "n1", Step: 1, Tool: "get",
			ArgsDigest: "sha256:get", Output: `{"name":"get"}`, Outcome: "FAILED", Message: "msg",
			Code: "agent_runtime.40016", Name: "TOOL_TIMEOUT", Category: "execution", Recoverable: true,
			Next: "retry", Status: "RUNNING", Stalls: 1, StallsAdded: 1, Result: ResultRetrying, Weight: WeightRecoverable},
		{Time: fixedNow(), Tenant: "beta", Session: "s2", Task: "t1", Node: "n1", Step: 3, Tool: "put", ArgsDigest: "d3", Output: `{"id":3}`,
			Outcome: "SUCCESS", Message: "msg", Status: "RUNNING", Result: ResultSuccess, Weight: WeightSuccess},
		{Time: fixedNow(), Tenant: "acme", Session: "s1", Task: "t1", Node: "n1", Step: 4, Tool: "get",
			ArgsDigest: "sha256:get", Output: `{"name":"get"}`, Outcome: "SUCCESS", Message: "msg",
			Status: "RUNNING", Result: ResultSuccess, Weight: WeightSuccess},
		{Time: fixedNow(), Tenant: "beta", Session: "s2", Task: "t1", Node: "n1", Step: 5, Tool: "put",
			Outcome: "REJECTED", Message: "msg", Code: "agent_runtime.40014", Name: "MCP_INVALID_PARAMS",
			Category: "argument", Recoverable: true, Next: "change", Status: "RUNNING", Stalls: 1,
			StallsAdded: 1, Result: ResultRetrying, Weight: WeightRecoverable},
		{Time: fixedNow(), Tenant: "acme", Session: "s1", Task: "t1", Node: "n1", Step: 6, Tool: "get",
			ArgsDigest: "sha256:get", Output: `{"name":"get"}`, Outcome: "SUCCESS", Message: "msg",
			Status: "RUNNING", Result: ResultSuccess, Weight: WeightSuccess},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored\n%+v\nwant\n%+v", got, want)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRecorderLosses: each way of losing records is counted, logged and
// reported by the Recorder's and the Sink's Err, and Emit never waits.
func TestRecorderLosses(t *testing.T) {
	t.Parallel()
	success := func(seq int64) loop.Event { return tool(seq, "n1", "get", "SUCCESS", "", 0, "RUNNING") }
	tests := []struct {
		name  string
		run   func(t *testing.T, st *memStore, r *Recorder) (a, b *Sink)
		stats Stats
		err   error
		aErr  string // the first sink's first error
		bErr  string
		logs  string
	}{
		{
			name: "queue full",
			run: func(t *testing.T, st *memStore, r *Recorder) (*Sink, *Sink) {
				a, b := r.Sink("acme", "s1"), r.Sink("beta", "s2")
				st.hold()
				a.Emit(success(1)) // taken by the goroutine, which waits
				<-st.entered
				a.Emit(success(2)) // queued
				a.Emit(success(3)) // queued: the queue of 2 is full
				b.Emit(success(4)) // lost
				a.Emit(success(5)) // lost
				st.release()
				return a, b
			},
			stats: Stats{Written: 3, Lost: 2},
			err:   ErrQueueFull,
			aErr:  "feedback: 2 records waiting: feedback queue full",
			bErr:  "feedback: 2 records waiting: feedback queue full",
			logs: `level=ERROR msg="feedback records lost" records=1 lost_total=1 error="feedback: 2 records waiting: feedback queue full" tenant=beta session=s2
level=ERROR msg="feedback records lost" records=1 lost_total=2 error="feedback: 2 records waiting: feedback queue full" tenant=acme session=s1
`,
		},
		{
			name: "store fails",
			run: func(t *testing.T, st *memStore, r *Recorder) (*Sink, *Sink) {
				a, b := r.Sink("acme", "s1"), r.Sink("beta", "s2")
				st.fail = errors.New("disk full")
				a.Emit(success(1))
				if err := r.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				st.mu.Lock()
				st.fail = nil
				st.mu.Unlock()
				b.Emit(success(2)) // stored: a failure does not stop the Recorder
				return a, b
			},
			stats: Stats{Written: 1, Lost: 1},
			err:   errors.New("disk full"),
			aErr:  "feedback: store 1 records: disk full",
			logs: `level=ERROR msg="feedback records lost" records=1 lost_total=1 error="feedback: store 1 records: disk full"
`,
		},
		{
			name: "after close",
			run: func(t *testing.T, st *memStore, r *Recorder) (*Sink, *Sink) {
				a, b := r.Sink("acme", "s1"), r.Sink("beta", "s2")
				a.Emit(success(1))
				if err := r.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				b.Emit(success(2))
				if err := r.Flush(context.Background()); !errors.Is(err, ErrClosed) {
					t.Errorf("flush after close: %v", err)
				}
				return a, b
			},
			stats: Stats{Written: 1, Lost: 1},
			err:   ErrClosed,
			bErr:  "feedback: feedback recorder closed",
			logs: `level=ERROR msg="feedback records lost" records=1 lost_total=1 error="feedback: feedback recorder closed" tenant=beta session=s2
`,
		},
		{
			name: "bad event",
			run: func(t *testing.T, st *memStore, r *Recorder) (*Sink, *Sink) {
				a, b := r.Sink("acme", "s1"), r.Sink("beta", "s2")
				a.Emit(tool(1, "n1", "get", "MAYBE", "", 0, "RUNNING"))
				a.Emit(success(2)) // a bad event does not stop the sink
				return a, b
			},
			stats: Stats{Written: 1, Lost: 1},
			err:   abi.ErrUnknownOutcome,
			aErr:  `feedback: step 1: abi: outcome "MAYBE": unknown outcome`,
			logs: `level=ERROR msg="feedback records lost" records=1 lost_total=1 error="feedback: step 1: abi: outcome \"MAYBE\": unknown outcome" tenant=acme session=s1
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &memStore{}
			r, logs := newRecorder(t, st, 2, 10)
			a, b := tt.run(t, st, r)
			r.Close(context.Background())
			if r.Stats() != tt.stats {
				t.Errorf("stats %+v, want %+v", r.Stats(), tt.stats)
			}
			if err := r.Err(); err == nil || !errors.Is(err, tt.err) && !strings.Contains(err.Error(), tt.err.Error()) {
				t.Errorf("err %v, want %v", err, tt.err)
			}
			for _, s := range []struct {
				sink *Sink
				want string
			}{{a, tt.aErr}, {b, tt.bErr}} {
				if got := s.sink.Err(); s.want == "" && got != nil || s.want != "" && (got == nil || got.Error() != s.want) {
					t.Errorf("sink %s: err %v, want %q", s.sink.Session, got, s.want)
				}
			}
			if logs.String() != tt.logs {
				t.Errorf("logs:\n%s\nwant:\n%s", logs.String(), tt.logs)
			}
		})
	}
}

func TestRecorderOptions(t *testing.T) {
	t.Parallel()
	ok := DefaultRecorderOptions()
	tests := []struct {
		name string
		st   Store
		edit func(*RecorderOptions)
		err  string
	}{
		{"no store", nil, func(*RecorderOptions) {}, "feedback: recorder: bad recorder options: no store"},
		{"queue", &memStore{}, func(o *RecorderOptions) { o.Queue = 0 }, "feedback: recorder: bad recorder options: queue 0"},
		{"batch", &memStore{}, func(o *RecorderOptions) { o.Batch = -1 }, "feedback: recorder: bad recorder options: batch -1"},
		{"timeout", &memStore{}, func(o *RecorderOptions) { o.WriteTimeout = 0 }, "feedback: recorder: bad recorder options: write timeout 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := ok
			tt.edit(&o)
			if _, err := NewRecorder(tt.st, o); err == nil || err.Error() != tt.err || !errors.Is(err, ErrBadOptions) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// TestRecorderHammer: many sessions emit at once while another goroutine
// flushes; every record is stored exactly once, with its own session's
// stall counts.
func TestRecorderHammer(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	r, _ := newRecorder(t, st, 10000, 16)
	var wg sync.WaitGroup
	for s := range 20 {
		wg.Go(func() {
			sink := r.Sink("acme", string(rune('a'+s)))
			for i := range 100 {
				sink.Emit(tool(int64(i), "n1", "get", "FAILED", "agent_runtime.40016", i+1, "RUNNING"))
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if err := r.Flush(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Feedback(context.Background(), Filter{Tenant: "acme"})
	seen := map[string]int{}
	for _, rec := range got {
		seen[rec.Session+string(rune(rec.Step))]++
		if rec.StallsAdded != 1 {
			t.Fatalf("record %+v: stalls added %d", rec, rec.StallsAdded)
		}
	}
	if len(got) != 2000 || len(seen) != 2000 || r.Stats() != (Stats{Written: 2000}) {
		t.Fatalf("%d records, %d distinct, stats %+v", len(got), len(seen), r.Stats())
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := Record{Time: at, Tenant: "acme", Tool: "get"}
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero", Filter{}, true},
		{"tenant", Filter{Tenant: "acme"}, true},
		{"other tenant", Filter{Tenant: "beta"}, false},
		{"tool", Filter{Tool: "get"}, true},
		{"other tool", Filter{Tool: "put"}, false},
		{"since, inclusive", Filter{Since: at}, true},
		{"since, other zone", Filter{Since: at.In(time.FixedZone("X", 3600))}, true},
		{"since later", Filter{Since: at.Add(time.Nanosecond)}, false},
		{"all", Filter{Tenant: "acme", Tool: "get", Since: at.Add(-time.Hour)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.f.Match(r); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}
