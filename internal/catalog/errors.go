package catalog

import "errors"

// ErrPinRequired is returned by Install for a package without a sha256 pin.
var ErrPinRequired = errors.New("a third-party builtin must be pinned by sha256")

// ErrNotBuiltin is returned by Install when the manifest is not a builtin's.
var ErrNotBuiltin = errors.New("not a builtin")

// ErrNotGranted is returned by Install when the manifest asks for a
// capability the tenant did not grant.
var ErrNotGranted = errors.New("capability not granted by the tenant")

// ErrManifestMismatch is returned by Install when the module's manifest is
// not the shipped one.
var ErrManifestMismatch = errors.New("module manifest differs from the shipped manifest")

// ErrDuplicateTool is returned by New when two builtin plugins provide the
// same tool.
var ErrDuplicateTool = errors.New("tool provided by two builtin plugins")

// ErrReservedName is returned by Install (CheckNames) for a third-party
// builtin tool named like a first-party builtin or with its prefix.
var ErrReservedName = errors.New("a third-party builtin may not take a first-party builtin's name or prefix builtin_")

// ErrBusinessName is returned by New when a third-party builtin's tool has
// the name of one of the skill's business tools: it would answer the
// business tool's calls past every guard.
var ErrBusinessName = errors.New("a builtin takes the name of one of the skill's business tools")
