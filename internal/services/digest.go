package services

import (
	"crypto/sha256"
	"encoding/hex"
)

func init() {
	Register("digest", digest)
}

// digest: in is a gjson path of the request; the result is the hex sha256
// of the canonical JSON of the value there (object keys sorted, no
// insignificant whitespace), or of "null" when the path matches nothing.
// The path is the guest's, so it passes CheckPath.
func digest(req, in []byte) ([]byte, error) {
	v, err := Query(req, string(in))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(Canonical(v))
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum[:])
	return out, nil
}
