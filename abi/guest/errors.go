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

// ErrService is returned by Call.Service when the host service failed.
var ErrService = errors.New("host service failed")

func serviceError(name, msg string) error {
	return fmt.Errorf("guest: service %q: %w: %s", name, ErrService, msg)
}
