//go:build jsonschema_nopattern

package jsonschema

import "errors"

// matcher is a compiled "pattern".
type matcher interface{ MatchString(string) bool }

// compilePattern refuses every pattern: this build leaves out regexp.
func compilePattern(string) (matcher, error) {
	return nil, errors.New("pattern support was left out of this build (tag jsonschema_nopattern)")
}
