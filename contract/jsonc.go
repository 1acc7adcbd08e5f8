package contract

import (
	"errors"
	"fmt"
)

// StripComments blanks out // line comments and /* */ block comments that are
// outside JSON strings, keeping byte offsets (and newlines) intact so that a
// later JSON syntax error points at the right place. An unterminated block
// comment or string is an error.
func StripComments(src []byte) ([]byte, error) {
	out := make([]byte, len(src))
	copy(out, src)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			out[i], out[i+1] = ' ', ' '
			i += 2
			for ; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i >= len(out) {
				line, col := lineCol(src, int64(start))
				return nil, fmt.Errorf("contract: %w opened at line %d column %d", errUnterminated, line, col)
			}
		}
	}
	return out, nil
}

var errUnterminated = errors.New("unterminated comment")
