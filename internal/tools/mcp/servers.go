package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/tools"
)

// Servers is the MCP servers of one agent offered as one tools.Provider:
// a call goes to the server that listed the tool. A tool name offered by two
// servers is refused, at DialAll and at every ListTools, rather than
// routed to either.
type Servers struct {
	clients []*Client

	mu     sync.RWMutex
	byTool map[string]*Client
	// linked maps the uri of each resource link a server returned to it,
	// so that ReadResourceTool reads it there (at most maxLinked).
	linked map[string]*Client
}

// maxLinked bounds the resource links Servers remembers; past it the
// oldest are forgotten all at once.
const maxLinked = 4096

// DialAll connects to every server, lists their tools and checks that no
// name is offered twice. Each Config needs a Name, unique in the set. On
// any failure the servers already connected are closed.
func DialAll(ctx context.Context, cfgs []Config) (*Servers, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrConfig)
	}
	seen := map[string]bool{}
	for i, cfg := range cfgs {
		switch {
		case cfg.Name == "":
			return nil, fmt.Errorf("%w: server %d has no name", ErrConfig, i+1)
		case seen[cfg.Name]:
			return nil, fmt.Errorf("%w: two servers are named %q", ErrConfig, cfg.Name)
		}
		seen[cfg.Name] = true
		if err := cfg.validate(); err != nil {
			return nil, fmt.Errorf("server %s: %w", cfg.Name, err)
		}
	}
	s := &Servers{}
	for _, cfg := range cfgs {
		c, err := Dial(ctx, cfg)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.clients = append(s.clients, c)
	}
	if _, err := s.ListTools(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Clients returns the servers' clients, in the order they were configured.
func (s *Servers) Clients() []*Client { return append([]*Client(nil), s.clients...) }

// ListTools lists every server's tools, each with its server's name, in
// the order of the servers, and routes calls by them.
func (s *Servers) ListTools(ctx context.Context) ([]tools.Tool, error) {
	out := []tools.Tool{}
	by := map[string]*Client{}
	for _, c := range s.clients {
		ts, err := c.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if t.Name == ReadResourceTool && c.readsResources(t.Name) {
				// Every server's resources are read through one tool,
				// routed by the resource's URI (readRoute).
				if _, ok := by[t.Name]; !ok {
					t.Description = "Read a resource by its URI (MCP resources/read), e.g. the uri of a resource_link a tool returned. The answer is {\"contents\":[{\"uri\",\"mimeType\",\"text\" or \"blob\"}]}."
					out = append(out, t)
				}
				by[t.Name] = c
				continue
			}
			if other, ok := by[t.Name]; ok {
				return nil, fmt.Errorf("%w: %q is offered by servers %q and %q; rename one of them on its server, or drop a server", ErrToolCollision, t.Name, other.name, c.name)
			}
			by[t.Name] = c
			t.Server = c.name
			out = append(out, t)
		}
	}
	s.mu.Lock()
	s.byTool = by
	s.mu.Unlock()
	return out, nil
}

// route is the server that offers the tool: as routed at the last
// ListTools, else, for a tool a server added since
// (notifications/tools/list_changed), the one server whose current list
// has it. A name two servers offer is routed to neither.
func (s *Servers) route(tool string) *Client {
	s.mu.RLock()
	c := s.byTool[tool]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	var found *Client
	for _, c := range s.clients {
		if slices.ContainsFunc(c.Tools(), func(t tools.Tool) bool { return t.Name == tool }) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// Tools returns every server's tools as last listed, each with its
// server's name (tools.Live): a tool a server added after DialAll is
// there once its list_changed was followed. A name two servers offer is
// left out, as ListTools would refuse it. No request is sent.
func (s *Servers) Tools() []tools.Tool {
	var out []tools.Tool
	count := map[string]int{}
	for _, c := range s.clients {
		for _, t := range c.Tools() {
			if t.Name == ReadResourceTool && c.readsResources(t.Name) {
				if count[t.Name] > 0 {
					continue // one tool reads every server's resources
				}
				t.Server = ""
			} else {
				t.Server = c.name
			}
			count[t.Name]++
			out = append(out, t)
		}
	}
	return slices.DeleteFunc(out, func(t tools.Tool) bool { return count[t.Name] > 1 })
}

// CallTool calls the tool on the server that listed it. A tool no server
// listed is invalid params: nothing was sent anywhere.
func (s *Servers) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	if name == ReadResourceTool {
		if rs := s.readers(); len(rs) > 0 {
			return s.read(ctx, rs, args)
		}
	}
	c := s.route(name)
	if c == nil {
		return chain.Response{}, fmt.Errorf("%w %q: %w", ErrUnknownTool, name, chain.ErrInvalidParams)
	}
	resp, err := c.CallTool(ctx, name, args)
	if err == nil {
		s.remember(c, linkedURIs(resp.Content))
	}
	return resp, err
}

// readers are the servers whose ReadResourceTool is their Client's own.
func (s *Servers) readers() []*Client {
	var out []*Client
	for _, c := range s.clients {
		if c.readsResources(ReadResourceTool) {
			out = append(out, c)
		}
	}
	return out
}

// read reads a resource on the server that linked it; a URI no server
// linked is read on each server with resources in turn until one has it.
func (s *Servers) read(ctx context.Context, rs []*Client, args json.RawMessage) (chain.Response, error) {
	var in struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(args, &in)
	s.mu.RLock()
	c := s.linked[in.URI]
	s.mu.RUnlock()
	if c != nil {
		return c.CallTool(ctx, ReadResourceTool, args)
	}
	var resp chain.Response
	var err error
	for _, c := range rs {
		resp, err = c.CallTool(ctx, ReadResourceTool, args)
		if !errors.Is(err, chain.ErrInvalidParams) {
			return resp, err
		}
	}
	return resp, err
}

// remember notes the server of resource links.
func (s *Servers) remember(c *Client, uris []string) {
	if len(uris) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.linked == nil || len(s.linked)+len(uris) > maxLinked {
		s.linked = map[string]*Client{}
	}
	for _, u := range uris {
		s.linked[u] = c
	}
}

// ToolTimeout is the CallTimeout of the tool's server (chain.ToolTimeouts).
func (s *Servers) ToolTimeout(tool string) time.Duration {
	if c := s.route(tool); c != nil {
		return c.cfg.CallTimeout
	}
	return 0
}

// Close closes every server.
func (s *Servers) Close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
