package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// Package is a builtin as a third party ships it: the module, the manifest
// file an operator reviews, and the digest the operator pins.
type Package struct {
	// Name names the package in errors and logs.
	Name string
	// Wasm is the module.
	Wasm []byte
	// Manifest is the shipped manifest.json. It must equal the manifest the
	// module itself exports (up to whitespace), so what the operator reviewed
	// is what runs.
	Manifest []byte
	// SHA256 is the pinned digest of Wasm (hex, "sha256:" prefix allowed).
	// It is required: a third-party module is never loaded unpinned.
	SHA256 string
}

// Grant is what one tenant allows one third-party builtin. The zero Grant
// allows nothing: no capability, the host's default limits, no config.
type Grant struct {
	// Tenant is the tenant the builtin is installed for; its calls run in
	// that tenant's instance pool.
	Tenant string
	// Capabilities the tenant grants. Every capability the manifest asks
	// for must be here, or the install fails; nothing is granted by default.
	Capabilities []abi.Capability
	// Limits cap each call (zero fields take host.DefaultLimits). A
	// manifest that asks for more than a cap fails the install.
	Limits abi.Limits
	// PoolSize bounds the tenant's instances; 0 means the host's default.
	PoolSize int
	// Config is the plugin's configuration, checked against its schema.
	Config json.RawMessage
}

// Installed is a third-party builtin loaded for one tenant.
type Installed struct {
	Tenant string
	Plugin *host.Plugin
}

// Manifest returns the builtin's manifest.
func (i *Installed) Manifest() abi.Manifest { return i.Plugin.Manifest() }

// Call runs one of the builtin's tools for the tenant. A plugin failure
// (trap, timeout, memory, broken result contract) is a FAILED observation
// with the host's code and next step.
func (i *Installed) Call(ctx context.Context, req *abi.Request) abi.Verdict {
	return i.Plugin.Builtin(ctx, i.Tenant, req)
}

// Close unloads the builtin.
func (i *Installed) Close(ctx context.Context) error { return i.Plugin.Close(ctx) }

// Install verifies and loads a third-party builtin for one tenant, in this
// order, failing before any guest code runs where it can: the pin is
// present; the shipped manifest parses strictly, is a builtin's and asks
// only for capabilities the tenant granted; the host checks the module's
// digest against the pin, compiles it, pre-warms one instance, checks the
// limits and the config; finally the module's own manifest must equal the
// shipped one.
func Install(ctx context.Context, h *host.Host, pkg Package, g Grant) (*Installed, error) {
	name := pkg.Name
	if name == "" {
		name = "builtin"
	}
	if strings.TrimPrefix(strings.TrimSpace(pkg.SHA256), "sha256:") == "" {
		return nil, fmt.Errorf("catalog: install %s: %w", name, ErrPinRequired)
	}
	shipped, err := abi.ParseManifest(pkg.Manifest)
	if err != nil {
		return nil, fmt.Errorf("catalog: install %s: shipped manifest: %w", name, err)
	}
	if shipped.Role != abi.RoleBuiltin {
		return nil, fmt.Errorf("catalog: install %s: role %q: %w", name, shipped.Role, ErrNotBuiltin)
	}
	if missing := ungranted(shipped.Capabilities, g.Capabilities); len(missing) > 0 {
		return nil, fmt.Errorf("catalog: install %s for tenant %q: %v: %w", name, g.Tenant, missing, ErrNotGranted)
	}
	p, err := h.Load(ctx, host.Source{Name: name, Bytes: pkg.Wasm, SHA256: pkg.SHA256},
		host.Policy{Limits: g.Limits, PoolSize: g.PoolSize, Config: g.Config, Capabilities: g.Capabilities})
	if err != nil {
		return nil, fmt.Errorf("catalog: install %s: %w", name, err)
	}
	if !sameManifest(shipped, p.Manifest()) {
		_ = p.Close(ctx)
		return nil, fmt.Errorf("catalog: install %s: the module exports %s, not the shipped manifest: %w", name, p.Ref(), ErrManifestMismatch)
	}
	return &Installed{Tenant: g.Tenant, Plugin: p}, nil
}

func ungranted(want, granted []abi.Capability) []abi.Capability {
	var out []abi.Capability
	for _, c := range want {
		ok := false
		for _, g := range granted {
			ok = ok || g == c
		}
		if !ok {
			out = append(out, c)
		}
	}
	return out
}

// sameManifest compares two manifests field by field; encoding/json
// compacts the raw schemas, so whitespace does not count.
func sameManifest(a, b abi.Manifest) bool {
	if a.ABI == 0 {
		a.ABI = abi.Version
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
