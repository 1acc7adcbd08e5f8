package services

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/tidwall/gjson"
)

func init() {
	Register("digest", digest)
}

// digest: in is a gjson path of the request; the result is the hex sha256
// of the canonical JSON of the value there (object keys sorted, no
// insignificant whitespace), or of "null" when the path matches nothing.
func digest(req, in []byte) ([]byte, error) {
	v := gjson.GetBytes(req, string(in))
	sum := sha256.Sum256(Canonical(v))
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum[:])
	return out, nil
}
