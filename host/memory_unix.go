//go:build linux || darwin || freebsd

package host

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAllocator backs each instance's linear memory with an anonymous
// mapping of its whole maximum, reserved without being committed: the
// kernel supplies zeroed pages as the guest first touches them, so growing
// the memory is a change of length, never a copy. The default allocator
// grows a Go slice, copying the whole memory each time; a Go guest grows
// its memory many times while it starts, which made starting an instance
// mostly memmove. The mapping is outside the Go heap and is unmapped when
// the instance closes.
type mmapAllocator struct{}

func (mmapAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max > 0 && max <= 1<<32 {
		b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err == nil {
			return &mmapMemory{buf: b}
		}
	}
	// No mapping: a Go slice, as wazero's own allocator does.
	return &sliceMemory{buf: make([]byte, 0, capacity), max: max}
}

// sliceMemory is a linear memory in a Go slice, grown by copying.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size > uint64(cap(m.buf)) {
		nb := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(nb, m.buf)
		m.buf = nb
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }

type mmapMemory struct {
	buf []byte
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:len(m.buf)]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// memoryAllocator is the allocator instances are created with; nil keeps
// wazero's.
var memoryAllocator experimental.MemoryAllocator = mmapAllocator{}
