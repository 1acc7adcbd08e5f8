//go:build wasip1

// Command env serves the builtin_env_* tools as a wasm plugin.
package main

import (
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/env"
)

func init() { guest.Serve(env.Plugin) }

func main() {}
