package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/tools/mcp"
)

// mcpServer is one item of mcp-servers, as the config file writes it.
type mcpServer struct {
	Name string `json:"name"`
	// Command is an argv list, or one string split at spaces.
	Command         json.RawMessage   `json:"command"`
	URL             string            `json:"url"`
	EnvAllow        []string          `json:"env-allow"`
	Env             []string          `json:"env"`
	Dir             string            `json:"dir"`
	Headers         map[string]string `json:"headers"`
	BearerTokenEnv  string            `json:"bearer-token-env"`
	BearerTokenFile string            `json:"bearer-token-file"`
	ConnectTimeout  string            `json:"connect-timeout"`
	CallTimeout     string            `json:"call-timeout"`
	Roots           []string          `json:"roots"`
}

// notAList is the error for an mcp-servers value (b, its JSON; nil when it
// has none) that is not a list. It names the value's JSON type only: the
// value may hold headers, tokens or env values, and errors are logged.
func notAList(b []byte) error {
	var v any
	if b == nil || json.Unmarshal(b, &v) != nil {
		return errors.New("not JSON, not a list")
	}
	kind := "an object"
	switch v.(type) {
	case string:
		kind = "a string"
	case float64:
		kind = "a number"
	case bool:
		kind = "a boolean"
	case nil:
		kind = "null"
	case []any:
		kind = "a list"
	}
	return fmt.Errorf("%s, not a list", kind)
}

// readMCPServers checks the mcp-servers list into c.mcpServers: names
// unique, exactly one of command and url, tokens read now from their
// variable or file (getenv is the environment serve was given).
func (c *serveConfig) readMCPServers(getenv func(string) string) error {
	if len(c.MCPServers) == 0 {
		return fmt.Errorf("required with --tools mcp-servers")
	}
	dec := json.NewDecoder(bytes.NewReader(c.MCPServers))
	dec.DisallowUnknownFields()
	var list []mcpServer
	if err := dec.Decode(&list); err != nil {
		return fmt.Errorf("not a list of servers: %w", err)
	}
	if len(list) == 0 {
		return fmt.Errorf("the list is empty")
	}
	seen := map[string]bool{}
	for i, s := range list {
		cfg, err := s.config(getenv)
		if err != nil {
			if s.Name != "" {
				return fmt.Errorf("server %q: %w", s.Name, err)
			}
			return fmt.Errorf("server %d: %w", i+1, err)
		}
		if seen[cfg.Name] {
			return fmt.Errorf("two servers are named %q", cfg.Name)
		}
		seen[cfg.Name] = true
		c.mcpServers = append(c.mcpServers, cfg)
	}
	return nil
}

func (s mcpServer) config(getenv func(string) string) (mcp.Config, error) {
	cfg := mcp.Config{Name: s.Name, URL: s.URL, EnvAllow: s.EnvAllow, Env: s.Env, Dir: s.Dir, Headers: s.Headers}
	if s.Name == "" {
		return cfg, fmt.Errorf("name is required")
	}
	if len(s.Command) > 0 && string(s.Command) != "null" {
		var one string
		if json.Unmarshal(s.Command, &one) == nil {
			cfg.Command = strings.Fields(one)
		} else if err := json.Unmarshal(s.Command, &cfg.Command); err != nil {
			return cfg, fmt.Errorf("command is neither a string nor a list of strings")
		}
		if len(cfg.Command) == 0 {
			return cfg, fmt.Errorf("command is empty")
		}
	}
	switch {
	case len(cfg.Command) > 0 && s.URL != "":
		return cfg, fmt.Errorf("set command or url, not both")
	case len(cfg.Command) == 0 && s.URL == "":
		return cfg, fmt.Errorf("command or url is required")
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return cfg, fmt.Errorf("url does not start with http:// or https://")
	case s.URL == "" && (len(s.Headers) > 0 || s.BearerTokenEnv != "" || s.BearerTokenFile != ""):
		return cfg, fmt.Errorf("headers and bearer tokens are for url servers")
	case s.URL != "" && (len(s.Env) > 0 || len(s.EnvAllow) > 0 || s.Dir != ""):
		return cfg, fmt.Errorf("env-allow, env and dir are for command servers")
	case s.BearerTokenEnv != "" && s.BearerTokenFile != "":
		return cfg, fmt.Errorf("set bearer-token-env or bearer-token-file, not both")
	}
	for i, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			// By position only: an entry is likely a secret's value.
			return cfg, fmt.Errorf("env entry %d is not KEY=VALUE", i+1)
		}
	}
	if s.BearerTokenEnv != "" {
		if cfg.BearerToken = getenv(s.BearerTokenEnv); cfg.BearerToken == "" {
			return cfg, fmt.Errorf("bearer-token-env: %s is empty", s.BearerTokenEnv)
		}
	}
	if s.BearerTokenFile != "" {
		b, err := os.ReadFile(s.BearerTokenFile)
		if err != nil {
			return cfg, fmt.Errorf("bearer-token-file: %w", err)
		}
		if cfg.BearerToken = strings.TrimSpace(string(b)); cfg.BearerToken == "" {
			return cfg, fmt.Errorf("bearer-token-file: %s is empty", s.BearerTokenFile)
		}
	}
	for _, d := range []struct {
		key string
		raw string
		to  *time.Duration
	}{{"connect-timeout", s.ConnectTimeout, &cfg.ConnectTimeout}, {"call-timeout", s.CallTimeout, &cfg.CallTimeout}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v <= 0 {
			return cfg, fmt.Errorf("%s %q is not a positive duration", d.key, d.raw)
		}
		*d.to = v
	}
	for _, r := range s.Roots {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "file" {
			return cfg, fmt.Errorf("root %q is not a file:// URI", r)
		}
		cfg.Roots = append(cfg.Roots, &sdk.Root{URI: r})
	}
	return cfg, nil
}
