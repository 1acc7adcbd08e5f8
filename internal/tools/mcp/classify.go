package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os/exec"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
)

// fail wraps a failed request with the chain sentinel that classifies it.
func (c *Client) fail(ctx context.Context, what string, err error) error {
	var auth *authError
	if errors.As(err, &auth) {
		c.logRefusal(what, err)
		// The server's refusal, without the SDK's transport wrapping.
		return fmt.Errorf("tools/mcp: %s on %s: %w: %w", what, c.name, chain.ErrAuth, auth)
	}
	return fmt.Errorf("tools/mcp: %s on %s: %w: %w", what, c.name, sentinel(ctx, err), err)
}

// codeRejected is the SDK's JSON-RPC code for a request its transport
// could not deliver (an HTTP POST that failed).
const codeRejected = -32005

// sentinel picks the chain sentinel for a failed request. Transport causes
// are checked before JSON-RPC codes: the SDK reports a failed HTTP POST as a
// JSON-RPC error that still wraps the network error.
func sentinel(ctx context.Context, err error) error {
	var wire *jsonrpc.Error
	var auth *authError
	switch {
	case errors.As(err, &auth):
		return chain.ErrAuth
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return chain.ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return chain.ErrUnreachable
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, context.Canceled):
		return chain.ErrIO
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne):
		return chain.ErrIO
	case errors.As(err, &wire) && wire.Code == jsonrpc.CodeInvalidParams:
		return chain.ErrInvalidParams
	case errors.As(err, &wire) && wire.Code == codeRejected:
		return chain.ErrIO
	}
	return chain.ErrRPC
}

// logRefusal tells the operator why a server refused a request: its
// status, its words and its challenge, bounded.
func (c *Client) logRefusal(what string, err error) {
	var auth *authError
	if errors.As(err, &auth) {
		c.log.Warn("tools/mcp: the server refused the credentials; renew the token or headers configured for it",
			"server", c.name, "request", what, "status", auth.status, "message", auth.message, "challenge", auth.challenge)
	}
}
