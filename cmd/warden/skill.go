package main

import (
	"context"
	"fmt"
	"io"
)

// cmdSkill handles `warden skill ...`.
func cmdSkill(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "warden skill: not built yet")
	return 2
}
