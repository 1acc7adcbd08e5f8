package scenario

import "errors"

// ErrInvalidScenario: a scenario file cannot be read or is inconsistent.
var ErrInvalidScenario = errors.New("invalid scenario")

// ErrSetup: the scenario's tools, plugins or model could not be started.
var ErrSetup = errors.New("scenario setup failed")
