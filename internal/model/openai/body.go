package openai

import (
	"fmt"
	"html"
	"mime"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a provider sends is quoted into errors, which reach logs, API
// answers, task reasons and the console: bounded, one line, the API key
// redacted, and an HTML page (a gateway's 502) reduced to its title or
// text.

// maxMessage bounds a provider's own error message; maxExcerpt the excerpt
// of a body that is not what was expected. Both count characters.
const (
	maxMessage = 300
	maxExcerpt = 120
)

var (
	reHiddenHTML = regexp.MustCompile(`(?is)<(script|style|head)\b.*?</(script|style|head)\s*>`)
	reTitle      = regexp.MustCompile(`(?is)<title\b[^>]*>(.*?)</title\s*>`)
	reTag        = regexp.MustCompile(`(?s)<[^>]*>`)
)

// describe says what a body that is not the expected JSON is: its
// content type, its size and a short excerpt of its text, e.g.
// "text/html, 166 bytes: 502 Bad Gateway".
func describe(body []byte, contentType, apiKey string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" {
		mt = "untyped"
	}
	text := string(body)
	if isHTML(mt, text) {
		text = htmlText(text)
	}
	text = bound(redact(oneLine(text), apiKey), maxExcerpt)
	if text == "" {
		return fmt.Sprintf("%s, %d bytes, no text", mt, len(body))
	}
	return fmt.Sprintf("%s, %d bytes: %s", mt, len(body), text)
}

// excerpt quotes the start of an event that is not what was expected.
func excerpt(data []byte, apiKey string) string {
	return bound(redact(oneLine(string(data)), apiKey), maxExcerpt)
}

// message is a provider's error message as an error may quote it.
func message(s, apiKey string) string { return bound(redact(oneLine(s), apiKey), maxMessage) }

func isHTML(mt, text string) bool {
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	t := strings.ToLower(strings.TrimSpace(text))
	return strings.HasPrefix(t, "<!doctype html") || strings.HasPrefix(t, "<html")
}

// htmlText is a page's title, else its visible text.
func htmlText(page string) string {
	if m := reTitle.FindStringSubmatch(page); m != nil && strings.TrimSpace(reTag.ReplaceAllString(m[1], "")) != "" {
		return html.UnescapeString(reTag.ReplaceAllString(m[1], " "))
	}
	page = reHiddenHTML.ReplaceAllString(page, " ")
	return html.UnescapeString(reTag.ReplaceAllString(page, " "))
}

// oneLine collapses runs of whitespace and drops control characters and
// invalid UTF-8.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "") {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bound keeps the first n characters of s, marking a cut with "…".
func bound(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return strings.TrimRight(s[:i], " ") + "…"
}
