//go:build !(linux || darwin || freebsd)

package host

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is the allocator instances are created with; nil keeps
// wazero's, which grows a Go slice.
var memoryAllocator experimental.MemoryAllocator
