package abi

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ArgsSyntax says why a model's argument text is not valid JSON: where the
// decoder stopped (1-based line and column), why, and a bounded excerpt of
// the text around that place. Empty reports text that is empty or only
// whitespace.
type ArgsSyntax struct {
	Empty        bool
	Line, Column int
	Message      string
	// Excerpt is at most ExcerptBytes of the text around the error, valid
	// UTF-8, with "…" where it was cut and line breaks written \n.
	Excerpt string
}

// ExcerptBytes bounds the text an ARG_JSON_INVALID reason quotes.
const ExcerptBytes = 80

// SyntaxOf locates the first syntax error of text. Valid JSON gives the
// zero value.
func SyntaxOf(text string) ArgsSyntax {
	if strings.TrimSpace(text) == "" {
		return ArgsSyntax{Empty: true}
	}
	var v any
	err := json.Unmarshal([]byte(text), &v)
	if err == nil {
		return ArgsSyntax{}
	}
	off, msg := len(text), err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the offending byte; point at it, or just past the
		// end when the text stops early.
		off = int(se.Offset) - 1
		if strings.HasPrefix(msg, "unexpected end") {
			off = len(text)
		}
	}
	off = max(0, min(off, len(text)))
	line, col := 1, 1 // the column counts characters, as the model wrote them
	for i := 0; i < off; {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return ArgsSyntax{Line: line, Column: col, Message: msg, Excerpt: excerptAt(text, off)}
}

// excerptAt is at most ExcerptBytes of text around byte off: most of it
// before, where the model's mistake usually is.
func excerptAt(text string, off int) string {
	from, to := 0, len(text)
	if to-from > ExcerptBytes {
		after := ExcerptBytes / 4
		to = min(len(text), off+after)
		from = max(0, to-ExcerptBytes)
		to = min(len(text), from+ExcerptBytes)
	}
	for from > 0 && from < len(text) && !utf8.RuneStart(text[from]) {
		from++
	}
	for to < len(text) && to > from && !utf8.RuneStart(text[to]) {
		to--
	}
	s := strings.ToValidUTF8(text[from:to], "")
	s = strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", " ").Replace(s)
	if from > 0 {
		s = "…" + s
	}
	if to < len(text) {
		s += "…"
	}
	return s
}

// ArgsJSONDetail is the {detail} of an ARG_JSON_INVALID for the argument
// text: what is wrong, where, and the text there, in the locale. It is
// never empty.
func ArgsJSONDetail(l Locale, text string) string {
	s := SyntaxOf(text)
	line, col := strconv.Itoa(s.Line), strconv.Itoa(s.Column)
	switch {
	case s.Empty && l == LocaleEN:
		return "the arguments are empty; a JSON object is expected ({} when there is nothing to pass)"
	case s.Empty:
		return "参数为空，应为 JSON 对象（没有参数时写 {}）"
	case s.Message == "" && l == LocaleEN:
		return "the arguments are not one JSON value"
	case s.Message == "":
		return "参数不是单个 JSON 值"
	case l == LocaleEN:
		return "line " + line + ", column " + col + ": " + s.Message + "; the arguments there read: " + s.Excerpt
	}
	return "第 " + line + " 行第 " + col + " 列：" + s.Message + "；该处参数原文：" + s.Excerpt
}
