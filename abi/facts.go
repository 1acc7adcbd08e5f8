package abi

import "unicode/utf8"

// decodeFacts decodes a guard's provenance facts (a JSON array of Fact) as
// decodeStrict does, without reflection for the common form: valid JSON, no
// key twice, an array of objects whose keys are path, source or detail and
// whose values are plain strings (no escape, valid UTF-8, so their text is
// what encoding/json would decode). Anything else goes to decodeStrict,
// which decides and says why.
func decodeFacts(data []byte) ([]Fact, error) {
	if fs, ok := plainFacts(data); ok {
		return fs, nil
	}
	var fs []Fact
	err := decodeStrict(data, &fs)
	return fs, err
}

// plainFacts decodes data when it has the common form; ok is false when it
// does not (nothing is decided then).
func plainFacts(data []byte) (fs []Fact, ok bool) {
	if valid, dup, _ := scanJSON(data); !valid || dup {
		return nil, false
	}
	s := dupScanner{data: data}
	s.ws()
	if s.i >= len(data) || data[s.i] != '[' {
		return nil, false
	}
	s.i++
	s.ws()
	if s.i < len(data) && data[s.i] == ']' {
		return []Fact{}, true
	}
	for {
		s.ws()
		if s.i >= len(data) || data[s.i] != '{' {
			return nil, false
		}
		s.i++
		var f Fact
		for {
			s.ws()
			if data[s.i] == '}' { // an empty object
				s.i++
				break
			}
			key, esc := s.str()
			if esc {
				return nil, false
			}
			s.ws()
			s.i++ // ':'
			s.ws()
			if data[s.i] != '"' {
				return nil, false
			}
			val, esc := s.str()
			if esc || !utf8.Valid(val) {
				return nil, false
			}
			switch string(key) {
			case "path":
				f.Path = string(val)
			case "source":
				f.Source = string(val)
			case "detail":
				f.Detail = string(val)
			default:
				return nil, false
			}
			s.ws()
			if data[s.i] == ',' {
				s.i++
				continue
			}
			s.i++ // '}'
			break
		}
		fs = append(fs, f)
		s.ws()
		if data[s.i] == ',' {
			s.i++
			continue
		}
		return fs, true // ']', and only whitespace after it (valid)
	}
}
