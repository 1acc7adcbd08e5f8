package main

import (
	"context"
	"fmt"
	"io"
)

// cmdClient runs a client command against a serving warden.
func cmdClient(_ context.Context, name string, _ []string, _, stderr io.Writer) int {
	fmt.Fprintf(stderr, "warden %s: not available in this build\n", name)
	return 2
}
