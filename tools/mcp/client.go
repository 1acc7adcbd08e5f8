package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/loop/chain"
	"github.com/agentwarden/warden/tools"
)

// DefaultStderrBytes is how much of a child's stderr a Client keeps (the
// tail) when Config.StderrBytes is 0.
const DefaultStderrBytes = 64 << 10

// DefaultStopGrace is how long Close lets a child exit after its stdin is
// closed before it is killed, when Config.StopGrace is 0.
const DefaultStopGrace = 2 * time.Second

// Config says how to reach one MCP server: set exactly one of Command (stdio)
// and URL (streamable HTTP).
type Config struct {
	// Name identifies the server in errors; it defaults to Command[0] or URL.
	Name string

	// Command is the argv of a stdio server. Command[0] is looked up in PATH
	// and run directly, never through a shell.
	Command []string
	// Env is the child's whole environment; nil inherits the parent's.
	Env []string
	// Dir is the child's working directory; "" is the parent's.
	Dir string
	// StderrBytes bounds the child's stderr kept for Stderr.
	StderrBytes int
	// StopGrace bounds a graceful stop of the child before it is killed.
	StopGrace time.Duration

	// URL is the endpoint of a streamable HTTP server.
	URL string
	// HTTPClient is used for URL; nil means http.DefaultClient.
	HTTPClient *http.Client
}

func (c Config) validate() error {
	switch {
	case len(c.Command) > 0 && c.URL != "":
		return fmt.Errorf("%w: both command and url are set", ErrConfig)
	case len(c.Command) == 0 && c.URL == "":
		return fmt.Errorf("%w: neither command nor url is set", ErrConfig)
	case len(c.Command) > 0 && c.Command[0] == "":
		return fmt.Errorf("%w: empty command", ErrConfig)
	case c.StderrBytes < 0:
		return fmt.Errorf("%w: negative stderr bytes", ErrConfig)
	case c.StopGrace < 0:
		return fmt.Errorf("%w: negative stop grace", ErrConfig)
	}
	return nil
}

// Client is a connection to one MCP server. It is safe for concurrent use.
type Client struct {
	cfg    Config
	name   string
	sdk    *sdk.Client
	stderr *tailBuffer

	mu     sync.Mutex
	sess   *session
	closed bool
}

// session is one MCP session: for stdio, one child process.
type session struct {
	cs   *sdk.ClientSession
	cmd  *exec.Cmd
	dead chan struct{} // closed when the session ended on its own
	// gone is set when a call learnt that the server forgot the session.
	gone bool
}

func (s *session) alive() bool {
	if s.gone {
		return false
	}
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

// Dial connects to the server and runs MCP initialization. A failure wraps
// chain.ErrUnreachable.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.StderrBytes == 0 {
		cfg.StderrBytes = DefaultStderrBytes
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	name := cfg.Name
	if name == "" {
		name = cfg.URL
		if len(cfg.Command) > 0 {
			name = cfg.Command[0]
		}
	}
	c := &Client{
		cfg:    cfg,
		name:   name,
		sdk:    sdk.NewClient(&sdk.Implementation{Name: "warden", Version: "0"}, nil),
		stderr: &tailBuffer{max: cfg.StderrBytes},
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.sess = s
	return c, nil
}

func (c *Client) connect(ctx context.Context) (*session, error) {
	s := &session{dead: make(chan struct{})}
	var t sdk.Transport
	if len(c.cfg.Command) > 0 {
		cmd := exec.Command(c.cfg.Command[0], c.cfg.Command[1:]...)
		cmd.Env = c.cfg.Env
		cmd.Dir = c.cfg.Dir
		cmd.Stderr = c.stderr
		isolate(cmd)
		s.cmd = cmd
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: c.cfg.StopGrace}
	} else {
		t = &sdk.StreamableClientTransport{
			Endpoint:   c.cfg.URL,
			HTTPClient: c.cfg.HTTPClient,
			// The invoker owns retries: a broken stream fails the call.
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
		}
	}
	cs, err := c.sdk.Connect(ctx, t, nil)
	if err != nil {
		if s.cmd != nil {
			killGroup(s.cmd)
			if s.cmd.Process != nil {
				_ = s.cmd.Wait()
			}
		}
		return nil, fmt.Errorf("tools/mcp: connect %s: %w: %w%s", c.name, chain.ErrUnreachable, err, c.stderrNote())
	}
	s.cs = cs
	go func() {
		_ = cs.Wait()
		close(s.dead)
	}()
	return s, nil
}

func (c *Client) stderrNote() string {
	if len(c.cfg.Command) == 0 {
		return ""
	}
	tail := strings.TrimSpace(c.stderr.String())
	if tail == "" {
		return ""
	}
	if len(tail) > 512 {
		tail = "…" + tail[len(tail)-512:]
	}
	return " (stderr: " + tail + ")"
}

// live returns the current session, reconnecting once when it is dead.
func (c *Client) live(ctx context.Context) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("%w: %w", ErrClosed, chain.ErrUnreachable)
	}
	if c.sess != nil && c.sess.alive() {
		return c.sess, nil
	}
	if c.sess != nil {
		c.stop(c.sess)
		c.sess = nil
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.sess = s
	return s, nil
}

// forget marks s as dead so the next call reconnects.
func (c *Client) forget(s *session) {
	c.mu.Lock()
	s.gone = true
	c.mu.Unlock()
}

// ListTools lists the server's tools, following pages.
func (c *Client) ListTools(ctx context.Context) ([]tools.Tool, error) {
	for retried := false; ; retried = true {
		s, err := c.live(ctx)
		if err != nil {
			return nil, err
		}
		out, err := c.list(ctx, s)
		if err != nil && errors.Is(err, sdk.ErrSessionMissing) && !retried {
			c.forget(s)
			continue
		}
		return out, err
	}
}

func (c *Client) list(ctx context.Context, s *session) ([]tools.Tool, error) {
	out := []tools.Tool{}
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.fail(ctx, "list tools", err)
		}
		tt, err := convertTool(t)
		if err != nil {
			return nil, fmt.Errorf("tools/mcp: list tools on %s: %w: %w", c.name, chain.ErrRPC, err)
		}
		out = append(out, tt)
	}
	return out, nil
}

func convertTool(t *sdk.Tool) (tools.Tool, error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return tools.Tool{}, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	out := tools.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in}
	if out.Title == "" && t.Annotations != nil {
		out.Title = t.Annotations.Title
	}
	if t.OutputSchema != nil {
		if out.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return tools.Tool{}, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
		}
	}
	return out, nil
}

// CallTool calls the tool. See the package doc for how results and failures
// map to chain.Response and the chain sentinels.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	for retried := false; ; retried = true {
		s, err := c.live(ctx)
		if err != nil {
			return chain.Response{}, err
		}
		res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			if errors.Is(err, sdk.ErrSessionMissing) && !retried {
				// The server refused the session before running anything.
				c.forget(s)
				continue
			}
			return chain.Response{}, c.fail(ctx, "call "+name, err)
		}
		return response(res)
	}
}

// response maps a tools/call result to a chain.Response.
func response(res *sdk.CallToolResult) (chain.Response, error) {
	var texts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	out := chain.Response{IsError: res.IsError, Text: strings.Join(texts, "\n")}
	switch {
	case res.StructuredContent != nil:
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return chain.Response{}, fmt.Errorf("tools/mcp: structured content: %w: %w", chain.ErrRPC, err)
		}
		out.Content = b
	case res.IsError:
	case len(texts) > 0:
		if json.Valid([]byte(out.Text)) {
			out.Content = json.RawMessage(out.Text)
		} else {
			out.Content, _ = json.Marshal(out.Text)
		}
	case len(res.Content) > 0:
		b, err := json.Marshal(res.Content)
		if err != nil {
			return chain.Response{}, fmt.Errorf("tools/mcp: content: %w: %w", chain.ErrRPC, err)
		}
		out.Content = b
	}
	return out, nil
}

// Stderr returns the tail of the child's stderr (stdio only).
func (c *Client) Stderr() string { return c.stderr.String() }

// Close ends the session; a child process is stopped, and killed with its
// process group when it does not exit within the stop grace.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.sess != nil {
		c.stop(c.sess)
		c.sess = nil
	}
	return nil
}

func (c *Client) stop(s *session) {
	done := make(chan struct{})
	go func() {
		_ = s.cs.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(c.cfg.StopGrace):
	}
	if s.cmd != nil {
		killGroup(s.cmd)
	}
	<-done
}
