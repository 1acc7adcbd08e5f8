// Package services holds the host services plugins call by name during a
// decision: library code (contract binding, digests, schema checks, …) that
// runs natively in the host because the same work inside a guest is an
// order of magnitude slower (docs/RATIONALE.md, "Host services").
//
// A service reads the request of the call in progress and a small input the
// guest passes, and returns bytes. It must be deterministic and read nothing
// but its arguments: it grants a plugin no information its request does not
// already hold. The host exposes every registered service through one host
// function (warden.service); the guest SDK's native runner calls the same
// functions in-process, so both builds of a plugin see the same bytes.
//
// Services register themselves from init functions of this package's files.
package services

import (
	"errors"
	"fmt"
	"sort"
)

// Func is one service: req is the call's request envelope (JSON), in the
// guest's input.
type Func func(req, in []byte) ([]byte, error)

// ErrUnknown is returned for a service name nobody registered.
var ErrUnknown = errors.New("unknown host service")

var registry = map[string]Func{}

// Register adds a service; it panics on a duplicate name. Call it from init.
func Register(name string, f Func) {
	if _, dup := registry[name]; dup {
		panic("services: duplicate " + name)
	}
	registry[name] = f
}

// Call runs the named service. A name longer than MaxServiceName or an
// input longer than MaxServiceInput is refused with ErrInput before any
// service runs: the inputs come from a sandboxed guest.
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
