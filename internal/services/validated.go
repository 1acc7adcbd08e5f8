package services

import (
	"context"
	"strings"
	"sync"
)

// A call's arguments are validated against the tool's input schema twice:
// by a guard (ArgPolicy asks validate) and by the chain before the tool
// runs, which must not depend on any guard. Validation is a pure function
// of the schema and the document, so the second asks the call's memo first:
// the same schema text and the same document bytes found valid earlier in
// the same call are valid. The memo lives in the call's context and dies
// with it; nothing is remembered across calls.

type validatedKey struct{}

// validated holds the (schema, document) pairs found valid in one call,
// and the values canonicalized in it (CanonicalIn).
type validated struct {
	mu    sync.Mutex
	pairs []validPair
	canon []*canonEntry // see CanonicalIn
}

type validPair struct{ schema, doc string }

// maxValidated bounds a call's memo; later valid pairs are not kept.
const maxValidated = 8

// WithValidated returns a context whose Validate calls remember, for the
// call it carries, the documents they found valid.
func WithValidated(ctx context.Context) context.Context {
	return context.WithValue(ctx, validatedKey{}, &validated{})
}

// ValidBefore reports whether Validate found doc valid against schema
// earlier under ctx (see WithValidated).
func ValidBefore(ctx context.Context, schema, doc string) bool {
	v, _ := ctx.Value(validatedKey{}).(*validated)
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.pairs {
		if p.schema == schema && p.doc == doc {
			return true
		}
	}
	return false
}

// markValid remembers doc valid against schema in ctx's memo; kept says
// both strings outlive the call unchanged and need no copy.
func markValid(ctx context.Context, schema, doc string, kept bool) {
	v, _ := ctx.Value(validatedKey{}).(*validated)
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.pairs) < maxValidated {
		if !kept {
			// copied: the caller's strings may alias a buffer it reuses
			schema, doc = strings.Clone(schema), strings.Clone(doc)
		}
		v.pairs = append(v.pairs, validPair{schema, doc})
	}
}
