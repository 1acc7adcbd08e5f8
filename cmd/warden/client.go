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

// cmdVersion prints warden's version.
func cmdVersion(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "warden (devel)")
	return 0
}
