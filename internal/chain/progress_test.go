package chain

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// worker is a Caller that works for a while, reporting progress every tick,
// and answers unless its context ends first.
type worker struct {
	work, tick time.Duration
	timeout    time.Duration // ToolTimeout's answer
}

func (w *worker) CallTool(ctx context.Context, _ string, _ json.RawMessage) (Response, error) {
	end := time.After(w.work)
	var tick <-chan time.Time
	if w.tick > 0 {
		tk := time.NewTicker(w.tick)
		defer tk.Stop()
		tick = tk.C
	}
	for i := 1; ; i++ {
		select {
		case <-end:
			return Response{Content: json.RawMessage(`"done"`)}, nil
		case <-tick:
			ReportProgress(ctx, Progress{Progress: float64(i), Total: 10, Message: "step"})
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
	}
}

func (w *worker) ToolTimeout(string) time.Duration { return w.timeout }

func TestProgressStretchesTheDeadline(t *testing.T) {
	t.Parallel()
	ms := func(n int64) *int64 { return &n }
	cases := []struct {
		name     string
		w        worker
		stretch  time.Duration
		contract *contract.Tool
		code     abi.Code // "" = SUCCESS
		progress bool
	}{
		{name: "progress keeps it alive", w: worker{work: 600 * time.Millisecond, tick: 50 * time.Millisecond}, progress: true},
		{name: "silence times out", w: worker{work: 600 * time.Millisecond}, code: abi.ToolTimeout},
		{name: "progress within the cap", w: worker{work: 900 * time.Millisecond, tick: 50 * time.Millisecond}, stretch: 400 * time.Millisecond, code: abi.ToolTimeout, progress: true},
		{name: "server timeout applies", w: worker{work: 300 * time.Millisecond, timeout: time.Second}},
		{name: "contract timeout wins", w: worker{work: 300 * time.Millisecond, timeout: time.Second}, contract: &contract.Tool{Name: "t", TimeoutMs: ms(100)}, code: abi.ToolTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.w
			inv := &Invoker{Caller: &w, DefaultTimeout: 200 * time.Millisecond, DefaultRetry: &contract.Retry{MaxAttempts: 1}, MaxProgressStretch: tc.stretch}
			r := inv.Invoke(t.Context(), Invocation{Tool: "t", Contract: tc.contract, Locale: abi.LocaleEN})
			if r.Observation.Code != tc.code {
				t.Fatalf("observation %+v, want code %q", r.Observation, tc.code)
			}
			if tc.code == "" && string(r.Observation.Data) != `"done"` {
				t.Fatalf("data %s", r.Observation.Data)
			}
			if got := r.ProgressCount > 0; got != tc.progress {
				t.Fatalf("%d progress notifications", r.ProgressCount)
			}
			if tc.progress && (r.Progress[0] != Progress{Progress: 1, Total: 10, Message: "step"} || len(r.Progress) != min(r.ProgressCount, maxProgressKept)) {
				t.Fatalf("progress %+v (count %d)", r.Progress, r.ProgressCount)
			}
		})
	}
}

func TestStretchCtx(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.Background())
	s := newStretchCtx(parent, 100*time.Millisecond, time.Second)
	d0, _ := s.Deadline()
	time.Sleep(50 * time.Millisecond)
	s.extend()
	if d1, _ := s.Deadline(); !d1.After(d0) {
		t.Fatalf("deadline did not move: %v then %v", d0, d1)
	}
	if s.Err() != nil {
		t.Fatalf("err %v before the deadline", s.Err())
	}
	// A context derived from it ends with it, as a deadline.
	child, stop := context.WithCancel(context.WithValue(s, progressKey{}, 1))
	defer stop()
	<-child.Done()
	if !errors.Is(s.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v, child %v", s.Err(), child.Err())
	}
	s.extend() // too late: nothing moves
	if !errors.Is(s.Err(), context.DeadlineExceeded) {
		t.Fatal("extended after the end")
	}
	// The parent's end is the stretch context's.
	s2 := newStretchCtx(parent, time.Minute, time.Hour)
	cancel()
	<-s2.Done()
	if !errors.Is(s2.Err(), context.Canceled) {
		t.Fatalf("err %v after the parent's cancel", s2.Err())
	}
}
