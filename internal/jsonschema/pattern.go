//go:build !jsonschema_nopattern

package jsonschema

import "regexp"

// matcher is a compiled "pattern".
type matcher interface{ MatchString(string) bool }

// compilePattern compiles a pattern as an unanchored Go RE2 expression.
// Build with the tag jsonschema_nopattern to leave regexp out of the binary;
// schemas using "pattern" then fail to compile with ErrPattern.
func compilePattern(expr string) (matcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return re, nil
}
