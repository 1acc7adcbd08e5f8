package services

import (
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/tidwall/gjson"
)

// Canonical returns a JSON value in canonical form (see canonical.JSON):
// RFC 8785's, with the exact value of a number float64 would round; a
// missing value is "null". Its
// output is persisted (fingerprints, idempotency digests), and guests use the
// same implementation, so both sides agree byte for byte.
func Canonical(v gjson.Result) []byte { return canonical.JSON(v) }
