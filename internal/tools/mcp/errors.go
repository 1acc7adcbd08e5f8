package mcp

import "errors"

// ErrConfig: the Config names neither or both of a command and a URL.
var ErrConfig = errors.New("tools/mcp: invalid config")

// ErrClosed: the Client was closed.
var ErrClosed = errors.New("tools/mcp: client closed")

// ErrToolCollision: two servers of one agent offer a tool of the same name.
var ErrToolCollision = errors.New("tools/mcp: tool offered by two servers")

// ErrUnknownTool: no server of the set offers the tool.
var ErrUnknownTool = errors.New("tools/mcp: unknown tool")
