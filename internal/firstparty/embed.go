//go:build warden_embed

package firstparty

import (
	"embed"
	"io/fs"
)

// `make build` copies the modules into wasm/ and builds with this tag; the
// pattern fails the build when none are there.
//
//go:embed wasm/*.wasm
var embeddedFS embed.FS

func embedded() fs.FS { return embeddedFS }
