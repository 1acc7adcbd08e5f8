package mcp

import "errors"

// ErrConfig: the Config names neither or both of a command and a URL.
var ErrConfig = errors.New("tools/mcp: invalid config")

// ErrClosed: the Client was closed.
var ErrClosed = errors.New("tools/mcp: client closed")
