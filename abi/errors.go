package abi

import "errors"

// ErrUnknownOutcome is returned for an outcome name that is not one of the four.
var ErrUnknownOutcome = errors.New("unknown outcome")

// ErrUnknownCode is returned for an error code that is not in the registry.
var ErrUnknownCode = errors.New("unknown error code")

// ErrMissingCode is returned when a non-success observation has no error code.
var ErrMissingCode = errors.New("non-success observation without an error code")

// ErrMissingReason is returned when a non-success observation has no reason.
var ErrMissingReason = errors.New("non-success observation without a reason")

// ErrMissingNext is returned when a non-success observation has no next step.
var ErrMissingNext = errors.New("non-success observation without a next step")

// ErrCodeOnSuccess is returned when a success observation carries an error code.
var ErrCodeOnSuccess = errors.New("success observation with an error code")

// ErrInvalidManifest is returned for a manifest the host cannot honour.
var ErrInvalidManifest = errors.New("invalid manifest")

// ErrUnknownEffect is returned for an effect kind that is not in the registry.
var ErrUnknownEffect = errors.New("unknown effect kind")

// ErrDuplicateKey is returned for a JSON object that holds a key twice.
var ErrDuplicateKey = errors.New("duplicate key")

// ErrKeyCase is returned for a JSON key that names a field only when case
// is ignored: keys are case-sensitive.
var ErrKeyCase = errors.New("key in the wrong case")

// ErrUnknownKey is returned for a JSON key the target type does not have.
var ErrUnknownKey = errors.New("unknown key")
