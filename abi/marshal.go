package abi

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v as json.Marshal does, except that '<', '>' and '&' stay
// as they are instead of becoming \u003c, \u003e and \u0026, in strings and
// in raw values alike. Everything the host stores or hands on (state views,
// evidence, approvals, the API's answers) is encoded with it, so a string a
// tool or the model sent reaches a write with the bytes it had.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
