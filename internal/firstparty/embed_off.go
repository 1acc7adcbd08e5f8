//go:build !warden_embed

package firstparty

import "io/fs"

// embedded is nil without the warden_embed tag: the modules are built from
// source on first use.
func embedded() fs.FS { return nil }
