// Package firstparty finds the first-party plugins' wasm modules (the seven
// guards and the control, node and env builtins) for warden run and warden
// serve, which run them as wasm by default.
//
// A warden built with `make build` carries them embedded (the warden_embed
// build tag). A binary without them (`go run ./cmd/warden`, `go test`)
// builds them once from the module's source tree with the Go toolchain into
// a cache directory named after the digest of everything the build reads:
// the plugins' Go files and embedded files in this module, the versions of
// the modules they import, and the toolchain's version and settings. A
// second process finds them there; two processes building at once each
// build into a directory of their own and rename it into place, so a
// reader only ever sees a whole set.
package firstparty
