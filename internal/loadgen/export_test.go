package loadgen

import (
	"context"
	"time"
)

// SetSleep replaces the pacing wait, so that a test with a fake clock can
// advance it instead of sleeping.
func (g *Generator) SetSleep(f func(ctx context.Context, stop <-chan struct{}, d time.Duration)) {
	g.sleep = f
}
