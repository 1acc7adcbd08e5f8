//go:build !killpoints

package main

import (
	"log/slog"

	"github.com/agentwarden/warden/internal/server"
)

// killpointEnv names the step a killpoints build dies at (killpoint.go);
// this build has none.
const killpointEnv = "WARDEN_KILLPOINT"

// installKillpoints does nothing: kill points exist only in a warden built
// with -tags killpoints, for the crash tests (killpoint.go).
func installKillpoints(*server.Options, *slog.Logger) error { return nil }
