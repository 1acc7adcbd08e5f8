package services

import "crypto/sha256"

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
