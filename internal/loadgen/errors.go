package loadgen

import "errors"

// ErrOptions is returned by New for options it cannot run with.
var ErrOptions = errors.New("loadgen: invalid options")

// ErrRun is returned by Run when it cannot start: no workers, a nil
// request function, or a second Run of one Generator.
var ErrRun = errors.New("loadgen: cannot run")
