package guest

import (
	"errors"
	"fmt"
)

// ErrPanic is returned by Native.Call when the handler panicked.
var ErrPanic = errors.New("plugin panicked")

// ErrSchema is returned by Call.Validate when the schema itself is invalid.
var ErrSchema = errors.New("invalid JSON Schema")

func schemaError(path, msg string) error {
	return fmt.Errorf("guest: schema at %q: %w: %s", path, ErrSchema, msg)
}
