// Package services holds the host primitives plugins call during a
// decision: path query and exists (Query, CheckPath), JSON Schema validation
// (Validate) and the canonical-JSON digest (Digest, Canonical). They are
// general-purpose and decide nothing: the rules of the spec are decided
// inside the plugins, so that swapping a plugin can change any of them
// (docs/ABI.md lists the host functions and their encodings).
//
// A primitive reads the request of the call in progress and a small input
// the guest passes. It must be deterministic and read nothing but its
// arguments: it grants a plugin no information its request does not already
// hold. The host exposes each through its own host function of module
// "warden"; the guest SDK's native runner calls the same functions
// in-process, so both builds of a plugin see the same bytes.
package services

import (
	"errors"
	"fmt"
	"sort"
)

// Func is a named service: req is the call's request envelope (JSON).
//
// Deprecated: plugins reach the primitives through their own host functions;
// the registry stays only for callers that still name the digest ("digest").
// Use Digest.
type Func func(req, in []byte) ([]byte, error)

// ErrUnknown is returned for a service name nobody registered.
var ErrUnknown = errors.New("unknown host service")

var registry = map[string]Func{}

// Register adds a named service; it panics on a duplicate name. Call it
// from init.
//
// Deprecated: see Func.
func Register(name string, f Func) {
	if _, dup := registry[name]; dup {
		panic("services: duplicate " + name)
	}
	registry[name] = f
}

// Call runs the named service. A name longer than MaxServiceName or an
// input longer than MaxServiceInput is refused with ErrInput before any
// service runs.
//
// Deprecated: see Func.
func Call(name string, req, in []byte) ([]byte, error) {
	if len(name) > MaxServiceName {
		return nil, fmt.Errorf("services: name of %d bytes, the limit is %d: %w", len(name), MaxServiceName, ErrInput)
	}
	if len(in) > MaxServiceInput {
		return nil, fmt.Errorf("services: %q: input of %d bytes, the limit is %d: %w", name, len(in), MaxServiceInput, ErrInput)
	}
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("services: %q: %w", name, ErrUnknown)
	}
	return f(req, in)
}

// Names lists the registered services, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
