package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/jsonschema"
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
// with the host's code and next step. The arguments are checked against
// the tool's declared input schema first: arguments that are not JSON are
// REJECTED ARG_JSON_INVALID, arguments that do not match the schema
// REJECTED ARG_REJECTED, and the plugin is not called.
func (i *Installed) Call(ctx context.Context, req *abi.Request) abi.Verdict {
	if v, ok := CheckArgs(i.Plugin.Manifest(), req); !ok {
		return v
	}
	return i.Plugin.Builtin(ctx, i.Tenant, req)
}

// Builtin runs one of the builtin's tools, as Call, for the tenant it was
// installed for; any other tenant's call is REJECTED CATALOG_DENIED. It
// makes an Installed a loop.Builtin: pass it in the tenant's builtins and
// its tools are offered to the tenant's nodes as builtins are (§12).
func (i *Installed) Builtin(ctx context.Context, tenant string, req *abi.Request) abi.Verdict {
	if tenant != i.Tenant {
		l := req.Locale
		o := abi.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(l, "tool", req.Tool), abi.NextCatalog.Text(l))
		o.Locale = l
		return abi.Verdict{Observation: &o}
	}
	return i.Call(ctx, req)
}

// Identity is the plugin's name@version and generation, for traces.
func (i *Installed) Identity() (string, uint64) { return i.Plugin.Ref(), i.Plugin.Generation() }

// CheckArgs checks a builtin call's arguments against the input schema the
// manifest declares for its tool, before the plugin sees them. It returns
// the REJECTED verdict and false when they do not pass: ARG_JSON_INVALID
// for arguments that are not JSON, ARG_REJECTED naming every failing field
// otherwise. A tool without a schema, or one the manifest does not
// provide, is left to the plugin.
func CheckArgs(m abi.Manifest, req *abi.Request) (abi.Verdict, bool) {
	var schema json.RawMessage
	for _, t := range m.Tools {
		if t.Name == req.Tool {
			schema = t.InputSchema
		}
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return abi.Verdict{}, true
	}
	l := req.Locale
	reject := func(o abi.Observation) (abi.Verdict, bool) {
		o.Locale = l
		return abi.Verdict{Observation: &o}, false
	}
	args := req.Args
	if args == nil {
		if strings.TrimSpace(req.ArgsText) != "" {
			detail := req.ArgsText
			if len(detail) > 120 {
				detail = strings.ToValidUTF8(detail[:120], "") + "…"
			}
			return reject(abi.Rejected(abi.ArgJSONInvalid, abi.ArgJSONInvalid.Reason(l, "detail", detail), abi.NextFixArgs.Text(l)))
		}
		args = json.RawMessage(`{}`)
	}
	s, err := jsonschema.Shared.Get(string(schema))
	if err != nil {
		return reject(abi.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", req.Tool, "detail", err.Error()), abi.NextFail.Text(l)))
	}
	errs := s.Validate(args)
	if len(errs) == 0 {
		return abi.Verdict{}, true
	}
	problems := make([]string, len(errs))
	for i, e := range errs {
		problems[i] = e.Error()
	}
	sep := "；"
	if l == abi.LocaleEN {
		sep = "; "
	}
	return reject(abi.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(l, "tool", req.Tool, "detail", strings.Join(problems, sep)), abi.NextFixArgs.Text(l)))
}

// ReservedPrefix begins the name of every first-party builtin tool (§12).
// No third-party builtin tool may take it, so a third party can neither
// take a first-party builtin's name nor pass for one.
const ReservedPrefix = "builtin_"

// FirstParty reports whether tool is one of the first-party builtins of §12.
func FirstParty(tool string) bool { return slices.Contains(builtinOrder, tool) }

// CheckNames refuses a third-party builtin manifest whose tools take a
// first-party builtin's name or its prefix (ErrReservedName), naming every
// such tool.
func CheckNames(m abi.Manifest) error {
	var bad []string
	for _, t := range m.Tools {
		switch {
		case FirstParty(t.Name):
			bad = append(bad, t.Name+" (a first-party builtin)")
		case strings.HasPrefix(t.Name, ReservedPrefix):
			bad = append(bad, t.Name+" (the "+ReservedPrefix+" prefix is the first-party builtins')")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("tools %s: %w", strings.Join(bad, ", "), ErrReservedName)
	}
	return nil
}

// Close unloads the builtin.
func (i *Installed) Close(ctx context.Context) error { return i.Plugin.Close(ctx) }

// Install verifies and loads a third-party builtin for one tenant, in this
// order, failing before any guest code runs where it can: the pin is
// present; the shipped manifest parses strictly, is a builtin's, names no
// tool with a first-party builtin's name or prefix (CheckNames) and asks
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
	if err := CheckNames(shipped); err != nil {
		return nil, fmt.Errorf("catalog: install %s: %w", name, err)
	}
	for _, t := range shipped.Tools {
		if len(bytes.TrimSpace(t.InputSchema)) == 0 {
			continue
		}
		if _, err := jsonschema.Shared.Get(string(t.InputSchema)); err != nil {
			return nil, fmt.Errorf("catalog: install %s: tool %s: input schema: %w", name, t.Name, err)
		}
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
