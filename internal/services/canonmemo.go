package services

import (
	"context"
	"crypto/sha256"
	"strings"

	"github.com/tidwall/gjson"
)

// One call canonicalizes the same arguments several times: Fingerprint
// digests them before the tool runs and again after, Evidence records
// their canonical form. Canonical JSON is a pure function of the value's
// bytes, so the call's memo (WithValidated) keeps the canonical form, and
// its digest once asked, of the few values canonicalized in the call, found
// again by their bytes. Nothing is remembered across calls.

// maxCanonicals bounds a call's canonical memo; later values are not kept.
const maxCanonicals = 8

type canonEntry struct {
	raw    string // the value's bytes (copied unless kept)
	canon  []byte
	sum    [DigestSize]byte
	summed bool
}

// CanonicalIn is Canonical, answered from the memo of the call ctx
// carries (WithValidated) when the same bytes were canonicalized in it.
// kept says v's bytes outlive the call unchanged, so the memo need not copy
// them. The answer is shared: the caller must not change it (appending to
// it copies).
func CanonicalIn(ctx context.Context, v gjson.Result, kept bool) []byte {
	e := canonEntryFor(ctx, v, kept)
	if e == nil {
		return Canonical(v)
	}
	return e.canon[:len(e.canon):len(e.canon)]
}

// DigestIn is the SHA-256 of CanonicalIn, itself kept in the call's memo.
func DigestIn(ctx context.Context, v gjson.Result, kept bool) [DigestSize]byte {
	e := canonEntryFor(ctx, v, kept)
	if e == nil {
		return sha256.Sum256(Canonical(v))
	}
	if !e.summed {
		e.sum, e.summed = sha256.Sum256(e.canon), true
	}
	return e.sum
}

// canonEntryFor finds or makes v's entry in ctx's memo; nil without a memo,
// for a missing value, or when the memo is full.
func canonEntryFor(ctx context.Context, v gjson.Result, kept bool) *canonEntry {
	m, _ := ctx.Value(validatedKey{}).(*validated)
	if m == nil || !v.Exists() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.canon {
		if e.raw == v.Raw {
			return e
		}
	}
	if len(m.canon) >= maxCanonicals {
		return nil
	}
	raw := v.Raw
	if !kept {
		raw = strings.Clone(raw)
	}
	e := &canonEntry{raw: raw, canon: Canonical(v)}
	m.canon = append(m.canon, e)
	return e
}
