package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
)

// DefaultStderrBytes is how much of a child's stderr a Client keeps (the
// tail) when Config.StderrBytes is 0.
const DefaultStderrBytes = 64 << 10

// DefaultStopGrace is how long Close lets a child exit after its stdin is
// closed before it is killed, when Config.StopGrace is 0.
const DefaultStopGrace = 2 * time.Second

// DefaultConnectTimeout bounds Dial (start or connect, and MCP
// initialization) when Config.ConnectTimeout is 0.
const DefaultConnectTimeout = 30 * time.Second

// Config says how to reach one MCP server: set exactly one of Command (stdio)
// and URL (streamable HTTP).
type Config struct {
	// Name identifies the server in errors; it defaults to Command[0] or URL.
	Name string
	// Command is the argv of a stdio server. Command[0] is looked up in PATH
	// and run directly, never through a shell.
	Command []string
	// EnvAllow names the variables of Warden's own environment that the
	// child may see. The child never inherits the whole environment: it
	// gets PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_ALL, LC_CTYPE, TZ,
	// TMPDIR, TMP, TEMP (those that are set), the allowlisted variables,
	// and Env — so a model's API key stays with Warden.
	EnvAllow []string
	// Env holds KEY=VALUE entries set for the child, over the others.
	Env []string
	// Dir is the child's working directory; "" is the parent's.
	Dir string
	// StderrBytes bounds the child's stderr kept for Stderr.
	StderrBytes int
	// StopGrace bounds a graceful stop of the child before it is killed.
	StopGrace time.Duration
	// URL is the endpoint of a streamable HTTP server.
	URL string
	// HTTPClient is used for URL; nil means one on http.DefaultTransport.
	HTTPClient *http.Client
	// Headers are sent with every HTTP request.
	Headers map[string]string
	// BearerToken, when set, is sent as "Authorization: Bearer …".
	BearerToken string
	// ConnectTimeout bounds Dial and a reconnect; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout is the timeout of this server's tools whose contract sets
	// no timeoutMs (chain.ToolTimeouts); 0 leaves the invoker's default.
	CallTimeout time.Duration

	// Server-to-client requests.

	// Roots answers roots/list; nil answers an empty list.
	Roots []*sdk.Root
	// ElicitationHandler answers elicitation/create; nil declines every
	// request (the agent has no user to ask in the middle of a call: a
	// missing input is the model's to ask for, as a follow-up).
	ElicitationHandler func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
	// SamplingHandler answers sampling/createMessage; nil does not
	// advertise sampling and refuses such a request with ErrSampling's
	// message.
	SamplingHandler func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error)
	// Logger receives what the server did that the calls do not show:
	// skipped stdout lines, declined and refused requests, its log
	// messages. nil discards.
	Logger *slog.Logger
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
	case c.ConnectTimeout < 0:
		return fmt.Errorf("%w: negative connect timeout", ErrConfig)
	case c.CallTimeout < 0:
		return fmt.Errorf("%w: negative call timeout", ErrConfig)
	case len(c.Command) > 0 && (len(c.Headers) > 0 || c.BearerToken != ""):
		return fmt.Errorf("%w: headers and bearer token are for url servers", ErrConfig)
	case c.URL != "" && (len(c.Env) > 0 || len(c.EnvAllow) > 0 || c.Dir != ""):
		return fmt.Errorf("%w: env and dir are for command servers", ErrConfig)
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("%w: env entry %q is not KEY=VALUE", ErrConfig, kv)
		}
	}
	for _, k := range c.EnvAllow {
		if k == "" || strings.Contains(k, "=") {
			return fmt.Errorf("%w: env allowlist entry %q is not a variable name", ErrConfig, k)
		}
	}
	return nil
}

// Client is a connection to one MCP server. It is safe for concurrent use.
type Client struct {
	cfg     Config
	name    string
	sdk     *sdk.Client
	stderr  *tailBuffer
	log     *slog.Logger
	hints   hints
	exact   exact
	skipped atomic.Int64
	http    *http.Client

	// calls maps the progress token of each call under way to its context.
	calls  sync.Map
	nextID atomic.Int64

	mu     sync.Mutex
	sess   *session
	closed bool

	// listed is the tools as last listed (Tools); stale is signalled on
	// notifications/tools/list_changed, due is open while a listing it
	// asked for is to come, done closed by Close.
	toolsMu sync.Mutex
	listed  []tools.Tool
	// synthRead: the list has ReadResourceTool, the Client's own.
	synthRead bool
	due       chan struct{}
	stale     chan struct{}
	done      chan struct{}
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
// chain.ErrAuth when the server refused the credentials, else
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
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	c := &Client{
		cfg:    cfg,
		name:   name,
		stderr: &tailBuffer{max: cfg.StderrBytes},
		log:    cfg.Logger,
		stale:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "warden", Version: "0"}, c.options())
	c.sdk.AddRoots(cfg.Roots...)
	c.sdk.AddReceivingMiddleware(c.refuseSampling)
	if cfg.URL != "" {
		c.http = c.httpClient()
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.sess = s
	go c.refresher()
	return c, nil
}

func (c *Client) connect(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	s := &session{dead: make(chan struct{})}
	var t sdk.Transport
	if len(c.cfg.Command) > 0 {
		cmd := exec.Command(c.cfg.Command[0], c.cfg.Command[1:]...)
		cmd.Env = childEnv(c.cfg)
		cmd.Dir = c.cfg.Dir
		cmd.Stderr = c.stderr
		isolate(cmd)
		s.cmd = cmd
		t = &stdioTransport{cmd: cmd, grace: c.cfg.StopGrace, log: c.log, server: c.name, peek: c.peek, sent: c.exact.sent, skipped: &c.skipped}
	} else {
		t = &sdk.StreamableClientTransport{
			Endpoint:   c.cfg.URL,
			HTTPClient: c.http,
			// A broken stream is reconnected twice (with Last-Event-ID:
			// a stream is resumed, a call is never sent again; the
			// invoker owns retries), so that a dropped standalone stream
			// does not end the session and fail the calls in flight.
			MaxRetries: 2,
			// The standalone SSE stream stays on: a server sends a request
			// that belongs to no call of ours (roots/list after
			// initialization) there, and without the stream it would wait
			// for an answer that never comes.
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
		var auth *authError
		if errors.As(err, &auth) {
			// The server's refusal, without the SDK's transport wrapping.
			c.logRefusal("connect", err)
			return nil, fmt.Errorf("tools/mcp: connect %s: %w: %w", c.name, chain.ErrAuth, auth)
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
		if err == nil {
			c.remember(out)
		}
		return out, err
	}
}

func (c *Client) list(ctx context.Context, s *session) ([]tools.Tool, error) {
	out, err := c.listServed(ctx, s)
	if err != nil {
		return nil, err
	}
	synth := offersResources(s) && !slices.ContainsFunc(out, func(t tools.Tool) bool { return t.Name == ReadResourceTool })
	if synth {
		out = append(out, c.readTool())
	}
	c.toolsMu.Lock()
	c.synthRead = synth
	c.toolsMu.Unlock()
	return out, nil
}

func (c *Client) listServed(ctx context.Context, s *session) ([]tools.Tool, error) {
	out := []tools.Tool{}
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.fail(ctx, "list tools", err)
		}
		tt, err := convertTool(t)
		if err != nil {
			return nil, fmt.Errorf("tools/mcp: list tools on %s: %w: %w", c.name, chain.ErrRPC, err)
		}
		h := c.hints.get(t.Name)
		tt.Annotations, tt.TaskSupport = h.annotations, h.taskSupport
		if tt.TaskSupport == "required" {
			// Warden calls tools synchronously; such a tool would only
			// ever answer with an error.
			c.log.Warn("tools/mcp: tool withheld: it requires task augmentation", "server", c.name, "tool", t.Name)
			continue
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
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage) (res chain.Response, err error) {
	ctx, span := c.startCall(ctx, name)
	defer func() { endCall(span, res, err) }()
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if c.readsResources(name) {
		return c.readResource(ctx, args)
	}
	for retried := false; ; retried = true {
		s, err := c.live(ctx)
		if err != nil {
			return chain.Response{}, err
		}
		params := &sdk.CallToolParams{Name: name, Arguments: args}
		token := fmt.Sprintf("warden-%d", c.nextID.Add(1))
		params.SetProgressToken(token)
		c.calls.Store(token, ctx)
		c.exact.expect(token)
		res, err := s.cs.CallTool(ctx, params)
		c.calls.Delete(token)
		raw, captured := c.exact.take(token)
		if err != nil && captured {
			// The server answered, but the SDK could not decode the
			// answer: structuredContent with a number no float64 holds
			// (1e400). The answer is read without it, and Content takes
			// it from raw.
			if r, derr := decodeResult(raw); derr == nil {
				res, err = r, nil
			}
		}
		if err != nil {
			if errors.Is(err, sdk.ErrSessionMissing) && !retried {
				// The server refused the session before running anything.
				c.forget(s)
				continue
			}
			if c.brokeUnder(ctx, s, err) {
				return chain.Response{}, fmt.Errorf("tools/mcp: call %s on %s: %w: %w", name, c.name, chain.ErrIO, err)
			}
			return chain.Response{}, c.fail(ctx, "call "+name, err)
		}
		if !captured {
			// Never fall back on the SDK's decoded values: their numbers
			// are float64, and a rounded id could reach a write.
			return chain.Response{}, fmt.Errorf("tools/mcp: call %s on %s: %w: the result's JSON was not seen as the server sent it (a message over %d bytes?)", name, c.name, chain.ErrRPC, maxPeek)
		}
		return response(res, raw)
	}
}

// brokeUnder reports whether a call's error that is neither the server's
// JSON-RPC error nor a known transport cause came from the session ending
// under the call: the SDK fails every call in flight with the error that
// ended the connection (over HTTP, a standalone SSE stream that could not
// reconnect to a crashed server), as plain text.
func (c *Client) brokeUnder(ctx context.Context, s *session, err error) bool {
	var wire *jsonrpc.Error
	if sentinel(ctx, err) != chain.ErrRPC || errors.As(err, &wire) {
		return false
	}
	select {
	case <-s.dead:
		return true
	case <-time.After(250 * time.Millisecond):
		return false
	}
}

// Stderr returns the tail of the child's stderr (stdio only).
func (c *Client) Stderr() string { return c.stderr.String() }

// SkippedLines counts the lines on a stdio server's stdout that were not
// JSON-RPC and were skipped.
func (c *Client) SkippedLines() int64 { return c.skipped.Load() }

// Name is the server's name, as in errors.
func (c *Client) Name() string { return c.name }

// ToolTimeout is Config.CallTimeout for every tool (chain.ToolTimeouts).
func (c *Client) ToolTimeout(string) time.Duration { return c.cfg.CallTimeout }

// Close ends the session; a child process is stopped, and killed with its
// process group when it does not exit within the stop grace.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	close(c.done)
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
