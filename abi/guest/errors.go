package guest

import "errors"

// ErrPanic is returned by Native.Call when the handler panicked.
var ErrPanic = errors.New("plugin panicked")
