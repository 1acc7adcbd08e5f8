package services_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// TestCanonicalInAnswersAsCanonical asks the memo for the same and for
// different values, past its bound and without one: every answer is the
// canonical form of the value asked, and the digest its SHA-256.
func TestCanonicalInAnswersAsCanonical(t *testing.T) {
	t.Parallel()
	values := []string{`{"b":1,"a":[1.0,2e3]}`, `{"a":[1.0,2e3],"b":1}`, `"x"`, `1.50`, `null`, `[]`}
	for i := range 12 { // more distinct values than the memo keeps
		values = append(values, fmt.Sprintf(`{"n":%d,"m":"%d"}`, i, i))
	}
	for _, ctx := range []context.Context{services.WithValidated(context.Background()), context.Background()} {
		for round := range 2 {
			for _, raw := range append(values, values...) {
				v := gjson.Parse(raw)
				want := services.Canonical(v)
				if got := services.CanonicalIn(ctx, v, round == 1); string(got) != string(want) {
					t.Fatalf("round %d: CanonicalIn(%s) = %s, want %s", round, raw, got, want)
				}
				if got := services.DigestIn(ctx, v, round == 1); got != sha256.Sum256(want) {
					t.Fatalf("round %d: DigestIn(%s) is not the digest of %s", round, raw, want)
				}
			}
		}
		missing := gjson.Get(`{}`, "x")
		if got := services.CanonicalIn(ctx, missing, false); string(got) != "null" {
			t.Fatalf("CanonicalIn(missing) = %s, want null", got)
		}
	}
}

// TestCanonicalInAnswerIsNotShared: appending to an answer does not change
// the next one.
func TestCanonicalInAnswerIsNotShared(t *testing.T) {
	t.Parallel()
	ctx := services.WithValidated(context.Background())
	v := gjson.Parse(`{"b":1,"a":2}`)
	a := services.CanonicalIn(ctx, v, false)
	_ = append(a, "tail"...)
	if got := services.CanonicalIn(ctx, v, false); string(got) != `{"a":2,"b":1}` {
		t.Fatalf("after an append: %s", got)
	}
}
