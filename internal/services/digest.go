package services

import (
	"crypto/sha256"
	"encoding/hex"
)

func init() {
	// Kept for callers of Call (tests and builtins not yet on Digest); the
	// guest SDK reaches the same code through the digest host function.
	Register("digest", digestService)
}

// DigestSize is the length of a digest in bytes (SHA-256).
const DigestSize = sha256.Size

// Digest is the digest primitive: the SHA-256 of the canonical JSON (see
// Canonical) of the value at a gjson path of the request, or of "null" when
// the path matches nothing. The path is the guest's, so it passes CheckPath
// first (ErrPath otherwise). The host's digest function and the guest SDK's
// native runner both call it, so both builds agree.
func Digest(req []byte, path string) ([DigestSize]byte, error) {
	v, err := Query(req, path)
	if err != nil {
		return [DigestSize]byte{}, err
	}
	return sha256.Sum256(Canonical(v)), nil
}

// digestService is Digest as a named service: in is the path, the answer
// the digest in lowercase hex.
func digestService(req, in []byte) ([]byte, error) {
	sum, err := Digest(req, string(in))
	if err != nil {
		return nil, err
	}
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum[:])
	return out, nil
}
