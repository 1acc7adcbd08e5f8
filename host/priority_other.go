//go:build !unix

package host

// lowerPriority does nothing where the host knows no way to lower a
// process's CPU priority.
func lowerPriority() {}
