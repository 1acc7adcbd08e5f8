// Package services holds the host primitives plugins call during a
// decision: path query and exists (Query, CheckPath), JSON Schema validation
// (Validate), canonical JSON and its digest (Canonical, Digest) and one walk
// over a value's size and leaves (Walk). They are
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
