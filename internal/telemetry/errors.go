package telemetry

import "errors"

// ErrLogLevel is returned by NewLogger for a level other than debug, info,
// warn or error.
var ErrLogLevel = errors.New("unknown log level")

// ErrTraceSpec is returned by SetupTracing for a spec other than "none" or
// "stdout:FILE".
var ErrTraceSpec = errors.New("unknown trace exporter")
