package services

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// Path bounds. A guest names what it wants read with a gjson path, and gjson
// runs on the host's own stack and heap: a path of "!" and a million "["
// overflowed the Go stack (fatal, not recoverable), "@pretty" on a nested
// literal allocated gigabytes, and a "%" pattern with several '*' over a long
// string backtracks for seconds. Every path a guest hands the host passes
// CheckPath first, which keeps the work of one lookup linear in the request
// and its recursion shallow.
const (
	// MaxPathBytes bounds the length of a path.
	MaxPathBytes = 512
	// MaxPathNesting bounds how deeply '(', '[' and '{' nest in a path
	// (queries, multipaths): gjson recurses once per level.
	MaxPathNesting = 8
	// MaxPathPipes bounds the '|' of a path: gjson recurses once per pipe.
	MaxPathPipes = 8
	// MaxPathHashes bounds the '#' of a path (each one walks an array).
	MaxPathHashes = 8
	// MaxPathSelectors bounds the ',' of a path: a multipath copies one
	// result per selector, so its answer can be that many times the request.
	MaxPathSelectors = 4
)

// ErrPath is returned for a path CheckPath refuses.
var ErrPath = errors.New("path refused")

// pathModifiers are the gjson modifiers a path may use: each answers with at
// most the bytes of its operand, in one pass, without recursion. The others
// are refused: @pretty and @ugly re-indent (the output of @pretty grows with
// depth times size), @flatten and @dig recurse into the value, @tostr and
// @fromstr re-encode, and the rest have no use in a guard.
var pathModifiers = map[string]bool{"this": true, "keys": true, "values": true, "reverse": true, "valid": true}

// pathSpecial are the bytes after which a '@' starts a modifier for gjson
// (or might, inside a query or multipath).
const pathSpecial = ".|[]{}(),:=<>!%\" \t\r\n"

var pathSpecialSet, pathSep = byteSet(pathSpecial), byteSet(".|()[]{},")

func byteSet(s string) (m [256]bool) {
	for i := 0; i < len(s); i++ {
		m[s[i]] = true
	}
	return m
}

// pathMark are the bytes CheckPath looks at; a path without any is a
// plain key path.
var pathMark = byteSet(`\"()[]{}|#,@*`)

// CheckPath reports whether a guest may run path on the host. It refuses
// (with ErrPath, naming the reason):
//
//   - paths longer than MaxPathBytes, nested deeper than MaxPathNesting, or
//     with more than MaxPathPipes '|', MaxPathHashes '#' or
//     MaxPathSelectors ',';
//   - modifiers other than @this, @keys, @values, @reverse and @valid, and
//     modifier arguments (":");
//   - a pattern or key wildcard with more than one '*' (matching one with
//     k stars backtracks as the string's length to the power k).
//
// '!' literals ("!{}", "!true") are JSON inside the path, so they are held
// to the same length and nesting: every literal bomb needed a large one.
//
// A '\' escapes the next byte as in gjson ("a\.b", "user\@x"); a '@'
// inside a key ("user@x") is refused only where gjson would read it as a
// modifier. Quoted strings inside queries, multipaths and literals are
// values, not paths, and are skipped.
func CheckPath(path string) error {
	if len(path) > MaxPathBytes {
		return fmt.Errorf("services: %w: %d bytes, the limit is %d", ErrPath, len(path), MaxPathBytes)
	}
	plain := true
	for i := 0; i < len(path); i++ {
		if pathMark[path[i]] {
			plain = false
			break
		}
	}
	if plain { // the common case: keys and dots only
		return nil
	}
	var nest, pipes, hashes, commas, stars int
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch c {
		case '\\':
			i++
			continue
		case '"':
			if nest == 0 {
				break // a plain byte of a key outside queries and multipaths
			}
			j, n := i+1, 0
			for ; j < len(path) && path[j] != '"'; j++ {
				if path[j] == '\\' {
					j++
				} else if path[j] == '*' {
					n++
				}
			}
			if n > 1 {
				return fmt.Errorf("services: %w: a pattern with %d '*' (at most one)", ErrPath, n)
			}
			i = j
			continue
		case '(', '[', '{':
			if nest++; nest > MaxPathNesting {
				return fmt.Errorf("services: %w: nested more than %d levels", ErrPath, MaxPathNesting)
			}
		case ')', ']', '}':
			nest--
		case '|':
			if pipes++; pipes > MaxPathPipes {
				return fmt.Errorf("services: %w: more than %d '|'", ErrPath, MaxPathPipes)
			}
		case '#':
			if hashes++; hashes > MaxPathHashes {
				return fmt.Errorf("services: %w: more than %d '#'", ErrPath, MaxPathHashes)
			}
		case ',':
			if commas++; commas > MaxPathSelectors {
				return fmt.Errorf("services: %w: more than %d selectors", ErrPath, MaxPathSelectors+1)
			}
		case '@':
			if i > 0 && !pathSpecialSet[path[i-1]] {
				break // inside a key
			}
			j := i + 1
			for j < len(path) && !pathSpecialSet[path[j]] {
				j++
			}
			name := path[i+1 : j]
			if !pathModifiers[name] {
				return fmt.Errorf("services: %w: modifier @%s is not available", ErrPath, name)
			}
			if j < len(path) && path[j] == ':' {
				return fmt.Errorf("services: %w: modifier @%s takes no arguments", ErrPath, name)
			}
			i = j - 1
			continue
		}
		if c == '*' {
			stars++
			if stars > 1 {
				return fmt.Errorf("services: %w: a key pattern with more than one '*'", ErrPath)
			}
		} else if pathSep[c] {
			stars = 0 // the next key pattern starts
		}
	}
	return nil
}

// Query runs a guest's gjson path on the request after CheckPath.
func Query(req []byte, path string) (gjson.Result, error) {
	if err := CheckPath(path); err != nil {
		return gjson.Result{}, err
	}
	return gjson.GetBytes(req, path), nil
}
