package server

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/store"
)

// kitResults remembers what the plugin kit found for a module with a
// config (digest NUL config), so that a module is probed once, not at each
// upload that attaches it.
type kitResults struct {
	mu   sync.Mutex
	done map[string][]string
}

// kitProblems runs the checks of `warden plugin test` (host/plugintest: the
// module's manifest and config, a probe of every phase and tool it declares
// with a read and a WRITE contract among them, determinism and concurrency)
// on a tenant module with the config it will run with, on the service's own
// host. Each failed check is one problem, prefixed with where: a guard that
// traps, loops, answers without a next step or with a code neither
// registered nor its own is refused where it is attached, never found in
// production.
func (s *Server) kitProblems(ctx context.Context, where string, rec store.PluginRecord, module []byte, config []byte) []string {
	key := rec.Digest + "\x00" + string(config)
	s.kit.mu.Lock()
	if out, ok := s.kit.done[key]; ok {
		s.kit.mu.Unlock()
		return prefixed(where, out)
	}
	s.kit.mu.Unlock()
	grants := make([]abi.Capability, len(rec.Grant))
	for i, c := range rec.Grant {
		grants[i] = abi.Capability(c)
	}
	rep := plugintest.Check(ctx, module, plugintest.Options{Name: rec.Name, SHA256: rec.Digest, On: s.opt.Host,
		Policy: host.Policy{Limits: s.opt.Policy.Limits, PoolSize: 1, Capabilities: grants, Config: config}})
	var out []string
	for _, c := range rep.Failed() {
		out = append(out, fmt.Sprintf("%s@%s fails the plugin kit's check %s: %s", rec.Name, rec.Version, c.Name, c.Detail))
	}
	if ctx.Err() != nil {
		// Cut short by the caller: not the module's verdict, not kept.
		return prefixed(where, out)
	}
	s.kit.mu.Lock()
	if s.kit.done == nil {
		s.kit.done = map[string][]string{}
	}
	s.kit.done[key] = out
	s.kit.mu.Unlock()
	return prefixed(where, out)
}

func prefixed(where string, out []string) []string {
	if where == "" || len(out) == 0 {
		return out
	}
	p := make([]string, len(out))
	for i, o := range out {
		p[i] = where + ": " + o
	}
	return p
}

// guardKitProblems runs the kit on every tenant guard a skill attaches,
// each with its attachment's config.
func (s *Server) guardKitProblems(ctx context.Context, c *contract.Contract, recs []store.PluginRecord) ([]string, error) {
	if c == nil || s.opt.Host == nil {
		return nil, nil
	}
	var out []string
	for i, g := range c.Guards {
		rec, ok := resolveRef(recs, g.Ref)
		if !ok {
			continue // refProblems has said so
		}
		module, err := s.registry().PluginModule(ctx, rec.Tenant, rec.Digest)
		if err != nil {
			return nil, fmt.Errorf("server: tenant guard %s: %w", g.Ref, err)
		}
		out = append(out, s.kitProblems(ctx, fmt.Sprintf("skill_contract.guards[%d]", i), rec, module, []byte(strings.TrimSpace(string(g.Config))))...)
	}
	return out, nil
}
