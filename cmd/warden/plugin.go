package main

import (
	"context"
	"fmt"
	"io"
)

// cmdPlugin handles `warden plugin ...`.
func cmdPlugin(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "warden plugin: not built yet")
	return 2
}
