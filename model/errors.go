package model

import "errors"

// ErrInvalidRequest is returned for a Request whose shape no model could
// answer: no messages, an unknown role, a tool message without a call id, a
// tool without a name or with a parameter schema that is not JSON.
var ErrInvalidRequest = errors.New("model: invalid request")
