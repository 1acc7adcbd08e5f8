package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi/guest/canonical"
)

// CanonicalJSON is the canonical form of a JSON value (package
// abi/guest/canonical: RFC 8785, with the exact value of a number float64
// would round), or an error when raw is not one well-formed JSON value.
func CanonicalJSON(raw []byte) ([]byte, error) {
	c, err := canonical.Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("contract: canonical json: %w", err)
	}
	return c, nil
}

// IdempotencyKey is the key of §14.2 that decides whether two write calls
// are the same business action. With key paths, the values at those
// parameter paths (lexicographic path order, missing ones skipped) are
// hashed as "path=canonical-json" lines with SHA-256. When no path is
// configured or every one is missing, the key is SHA-256 over the tool name
// and the canonical form of all arguments. The result is lowercase hex.
// Arguments that are not JSON are hashed as given.
func IdempotencyKey(tool string, keyPaths []string, args []byte) string {
	return idempotencyKey(tool, keyPaths, args, CanonicalJSON)
}

func idempotencyKey(tool string, keyPaths []string, args []byte, canonicalJSON func([]byte) ([]byte, error)) string {
	paths := slices.Clone(keyPaths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	h := sha256.New()
	found := false
	for _, p := range paths {
		pp, err := ParseParamPath(p)
		if err != nil {
			continue
		}
		v := pp.Get(args)
		if !hasValue(v) {
			continue
		}
		c, err := canonicalJSON([]byte(v.Raw))
		if err != nil {
			c = []byte(v.Raw)
		}
		fmt.Fprintf(h, "%s=%s\n", p, c)
		found = true
	}
	if found {
		return hex.EncodeToString(h.Sum(nil))
	}
	h.Reset()
	c, err := canonicalJSON(args)
	if err != nil {
		c = bytes.TrimSpace(args)
	}
	h.Write([]byte(strings.TrimSpace(tool)))
	h.Write([]byte{0})
	h.Write(c)
	return hex.EncodeToString(h.Sum(nil))
}

// KeyFor is the tool's §14.2 idempotency key for the given (bound) arguments.
func (t *Tool) KeyFor(args []byte) string {
	if t == nil {
		return IdempotencyKey("", nil, args)
	}
	return IdempotencyKey(t.Name, t.IdempotencyKey, args)
}

// LegacyKeyFor is the key KeyFor gave before the canonical form became RFC
// 8785's (ledger entries reserved before that carry it). WriteGate looks a
// write up under both keys and reserves it with both, so a write reserved
// before the upgrade still refuses its duplicate after it; it equals KeyFor
// for most arguments (see docs/RATIONALE.md, "One canonical JSON").
func (t *Tool) LegacyKeyFor(args []byte) string {
	if t == nil {
		return idempotencyKey("", nil, args, legacyCanonicalJSON)
	}
	return idempotencyKey(t.Name, t.IdempotencyKey, args, legacyCanonicalJSON)
}

// BuildArgs builds the arguments of the verify call (§6.4) from the original
// write request: each configured argument is its const or the value of its
// call.<path>; without args the original request is passed whole. A call
// path that finds nothing leaves the argument out.
func (v *Verify) BuildArgs(original []byte) (json.RawMessage, error) {
	if v == nil || len(v.Args) == 0 {
		return append(json.RawMessage(nil), original...), nil
	}
	doc := []byte("{}")
	var err error
	for _, k := range sortedKeys(v.Args) {
		a := v.Args[k]
		var raw []byte
		switch {
		case a.Const != nil:
			raw = a.Const
		case a.From != nil:
			r := a.From.Path.Get(original)
			if !r.Exists() {
				continue
			}
			raw = []byte(r.Raw)
		default:
			continue
		}
		if doc, err = SetRaw(doc, k, raw); err != nil {
			return nil, err
		}
	}
	return doc, nil
}
