package feedback

import "errors"

// ErrBadRecord marks a line that is not a feedback record.
var ErrBadRecord = errors.New("not a feedback record")

// ErrQueueFull: the Recorder's queue was full when a record came, because
// the store is slower than the calls; the record was not stored.
var ErrQueueFull = errors.New("feedback queue full")

// ErrClosed: a record came after the Recorder was closed; it was not stored.
var ErrClosed = errors.New("feedback recorder closed")

// ErrBadOptions: RecorderOptions with a limit that is not positive.
var ErrBadOptions = errors.New("bad recorder options")
