package chain

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStretchCtxDeadline: the context ends at its deadline, the step or
// the limit whichever comes first, with no progress reported.
func TestStretchCtxDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		step, max  time.Duration
		want       time.Duration // when Done closes
		wantWithin time.Duration
	}{
		{name: "limit shorter than the step", step: 10 * time.Second, max: 50 * time.Millisecond, want: 50 * time.Millisecond, wantWithin: 2 * time.Second},
		{name: "step shorter than the limit", step: 50 * time.Millisecond, max: 10 * time.Second, want: 50 * time.Millisecond, wantWithin: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			s := newStretchCtx(context.Background(), tt.step, tt.max)
			if d, ok := s.Deadline(); !ok || d.Sub(start) < tt.want || d.Sub(start) > tt.want+time.Second {
				t.Errorf("Deadline() = %v after start, want %v", d.Sub(start), tt.want)
			}
			select {
			case <-s.Done():
			case <-time.After(tt.wantWithin):
				t.Fatalf("not done %v after start; the deadline was %v away", tt.wantWithin, tt.want)
			}
			if el := time.Since(start); el < tt.want {
				t.Errorf("done after %v, before the deadline %v", el, tt.want)
			}
			if !errors.Is(s.Err(), context.DeadlineExceeded) {
				t.Errorf("Err() = %v, want %v", s.Err(), context.DeadlineExceeded)
			}
		})
	}
}
