package meter

import (
	"errors"

	"github.com/agentwarden/warden/host/internal/wasmbin"
)

// ErrMalformed is returned for input that is not a well-formed wasm 1 module.
var ErrMalformed = wasmbin.ErrMalformed

// ErrUnsupported is returned for a module that uses a feature wazero cannot
// run anyway: exception handling, tail calls, typed function references or
// the GC proposal, multiple memories, memory64.
var ErrUnsupported = errors.New("unsupported wasm feature")

// ErrReserved is returned for a module that imports from the meter's own
// module name: the rewriter adds that import, and a guest must not.
var ErrReserved = errors.New("module imports the meter's reserved module")
