package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrUnreachable: the request did not reach the server, or no answer came
// back (the error wrapping it says why).
var ErrUnreachable = errors.New("client: server unreachable")

// APIError is an error answer of the API: its HTTP status and the API's
// {"error":{"code","message"}}, or what a proxy in front of it said (code
// http_STATUS).
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// refusal reads an error answer.
func refusal(status int, body []byte) error {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return &APIError{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		text = "no error body"
	}
	return &APIError{Status: status, Code: fmt.Sprintf("http_%d", status), Message: http.StatusText(status) + ": " + text}
}

// unreachable is a transport failure: ErrUnreachable, and the cause without
// the *url.Error around it, whose text repeats the method and the URL.
type unreachable struct {
	server string
	err    error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("cannot reach the server at %s: %v", e.server, e.err)
}

func (e *unreachable) Unwrap() []error { return []error{ErrUnreachable, e.err} }
