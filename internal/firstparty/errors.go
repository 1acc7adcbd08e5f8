package firstparty

import "errors"

// ErrNoModules means the binary has no embedded modules and cannot build
// them: no source tree of this module was found, or no go command.
var ErrNoModules = errors.New("this warden binary has no embedded plugins; build it with `make build`, pass --plugins DIR, or --native")

// ErrIncomplete means a set of modules lacks one of the first-party plugins.
var ErrIncomplete = errors.New("incomplete set of first-party modules")

// ErrBuild means the go command failed to build a plugin.
var ErrBuild = errors.New("build failed")
