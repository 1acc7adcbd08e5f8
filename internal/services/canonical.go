package services

import (
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/tidwall/gjson"
)

// Canonical returns a JSON value in canonical form (see canonical.JSON):
// object keys sorted, later duplicates win, no insignificant whitespace,
// strings re-encoded, numbers as written; a missing value is "null". Its
// output is persisted (fingerprints, idempotency digests), and guests use the
// same implementation, so both sides agree byte for byte.
func Canonical(v gjson.Result) []byte { return canonical.JSON(v) }
