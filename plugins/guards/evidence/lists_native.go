//go:build !wasip1

package evidence

// listByHost is whether the entities read the records' members from the
// host's items answer: in wasm, where parsing the records in the guest
// costs more than the answer; in-process the records are read in place
// (they alias the request), without an answer to encode and decode.
const listByHost = false
