package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
)

// authError is an HTTP server's refusal of the credentials: 401 or 403.
// It is not transient: a retry sends the same token.
type authError struct {
	status int
	// message is what the server said (a JSON-RPC error's message, else
	// the start of the body), bounded; challenge its WWW-Authenticate.
	message   string
	challenge string
}

func (e *authError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
	if e.message != "" {
		s += ": " + e.message
	}
	if e.challenge != "" {
		s += " (WWW-Authenticate: " + e.challenge + ")"
	}
	return s
}

// maxAuthText bounds what an authError keeps of the server's words.
const maxAuthText = 200

// refusal reads a 401 or 403 response into an authError and closes it.
func refusal(resp *http.Response) *authError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	msg := string(b)
	var rpc struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &rpc) == nil && rpc.Error != nil {
		msg = rpc.Error.Message
	}
	if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "html") {
		msg = "" // a login page says nothing the status does not
	}
	return &authError{status: resp.StatusCode, message: oneLine(msg), challenge: oneLine(resp.Header.Get("WWW-Authenticate"))}
}

// oneLine is s on one line, control characters as spaces, at most
// maxAuthText bytes (cut at a rune boundary).
func oneLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if len(s) <= maxAuthText {
		return s
	}
	cut := maxAuthText
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
