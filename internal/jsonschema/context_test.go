package jsonschema

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// slowSchema has MaxSchemaNodes subschemas: too big to cache, and about a
// second to compile on a shared machine.
var slowSchema = `{"allOf":[` + strings.Repeat(`{"type":"object"},`, MaxSchemaNodes-2) + `{}]}`

// TestCheckContext checks that a compile is charged to the caller's
// deadline: the caller gets the deadline's error when it passes, not the
// compile's end, and a schema known to take longer than the time left is
// refused at once.
func TestCheckContext(t *testing.T) {
	c := NewCache(DefaultCacheBytes)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetContext(done, `{}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context: %v", err)
	}

	const deadline = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err := c.GetContext(ctx, slowSchema)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "jsonschema: compile: context deadline exceeded" {
		t.Fatalf("big schema: %v", err)
	}
	// The compile takes about a second: returning well before it ends is
	// the point; the margin is wide because the machine may be loaded.
	if took > deadline+400*time.Millisecond {
		t.Errorf("returned %v after the start, the deadline was %v", took, deadline)
	}
	// the background compile finishes and is remembered as slow, not cached
	s, err := c.Get(slowSchema)
	if err != nil || s == nil {
		t.Fatalf("compile: %v", err)
	}
	if n, _ := c.Stats(); n != 0 {
		t.Errorf("a schema too big to keep was cached: %d entries", n)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), deadline)
	defer cancel2()
	start = time.Now()
	_, err = c.GetContext(ctx2, slowSchema)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "jsonschema: compile: takes ") {
		t.Fatalf("known slow schema: %v", err)
	}
	if took := time.Since(start); took > deadline/2 {
		t.Errorf("known slow schema refused after %v, want at once", took)
	}

	// within the deadline, CheckContext answers as Check does
	out, err := CheckContext(context.Background(), `{"type":"string"}`, gjson.Parse(`1`))
	if err != nil || string(out) != string(Check(`{"type":"string"}`, gjson.Parse(`1`))) || len(out) == 0 {
		t.Fatalf("CheckContext = %q, %v", out, err)
	}
}
