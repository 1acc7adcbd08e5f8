// Package firstparty finds the first-party module for warden run and warden
// serve, which run the first-party plugins (the seven guards and the
// control, node and env builtins) as wasm by default: one module serving
// all ten (plugins/firstparty/cmd), which each slot loads bound to its
// plugin (host.SelectPlugin), so that one Go runtime and one compilation
// serve every slot.
//
// A warden built with `make build` carries it embedded (the warden_embed
// build tag). A binary without it (`go run ./cmd/warden`, `go test`)
// builds it once from the module's source tree with the Go toolchain into
// a cache directory named after the digest of everything the build reads:
// the plugins' Go files and embedded files in this module, the versions of
// the modules they import, and the toolchain's version and settings. A
// second process finds it there; two processes building at once each
// build into a directory of their own and rename it into place, so a
// reader only ever sees a whole build. A directory of modules (--plugins)
// holds the first-party module, a module of its own for some plugin, or
// both: a plugin's own module takes its slot's place.
package firstparty
