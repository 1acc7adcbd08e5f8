package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentwarden/warden/loop/chain"
	"github.com/agentwarden/warden/tools"
)

// Servers is the MCP servers of one agent offered as one tools.Provider:
// a call goes to the server that listed the tool. A tool name offered by two
// servers is refused, at DialAll and at every ListTools, rather than
// routed to either.
type Servers struct {
	clients []*Client

	mu     sync.RWMutex
	byTool map[string]*Client
}

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

func (s *Servers) route(tool string) *Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byTool[tool]
}

// CallTool calls the tool on the server that listed it. A tool no server
// listed is invalid params: nothing was sent anywhere.
func (s *Servers) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	c := s.route(name)
	if c == nil {
		return chain.Response{}, fmt.Errorf("%w %q: %w", ErrUnknownTool, name, chain.ErrInvalidParams)
	}
	return c.CallTool(ctx, name, args)
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
