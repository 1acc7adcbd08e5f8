package plugintest

import "errors"

// ErrCases is returned for a cases file that cannot be read as written.
var ErrCases = errors.New("invalid cases file")

// ErrBuild is returned when a plugin's main package does not build.
var ErrBuild = errors.New("plugin build failed")
