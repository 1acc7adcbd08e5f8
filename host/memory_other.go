//go:build !(linux || darwin || freebsd)

package host

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is the allocator instances are created with; nil keeps
// wazero's, which grows a Go slice.
var memoryAllocator experimental.MemoryAllocator

// noMappings is the mapping pool where instances use no mappings.
type noMappings struct{}

func (noMappings) trim() {}

var mappings noMappings
