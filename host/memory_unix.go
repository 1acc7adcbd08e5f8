//go:build linux || darwin || freebsd

package host

import (
	"runtime"
	"sync"
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
		b := mappings.take(max)
		if b == nil {
			var err error
			if b, err = syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve); err != nil {
				b = nil
			}
		}
		if b != nil {
			m := &mmapMemory{buf: b}
			// wazero frees a memory when its module closes, but not when
			// instantiating the module fails after the memory was made (a
			// start function that traps, say): the mapping is then
			// unmapped when the memory is collected.
			runtime.SetFinalizer(m, func(m *mmapMemory) {
				if m.buf != nil {
					_ = syscall.Munmap(m.buf)
				}
			})
			return m
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
	buf  []byte
	used uint64 // the largest size handed out
}

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	m.used = max(m.used, size)
	return m.buf[:size:len(m.buf)]
}

// Free gives the mapping back for the next instance, zeroed, or unmaps it.
func (m *mmapMemory) Free() {
	if m.buf != nil {
		mappings.give(m.buf, m.used)
		m.buf = nil
		runtime.SetFinalizer(m, nil)
	}
}

// mappingPool keeps a few mappings of closed instances. Zeroing the part
// an instance used is cheaper than the page faults a fresh mapping takes
// for it again; nothing of one instance's memory reaches the next. The
// pages an instance touched stay resident while its mapping waits, so the
// pool is bounded by those bytes as well as by count.
type mappingPool struct {
	mu       sync.Mutex
	free     map[int][]kept // by mapping size
	n        int
	resident uint64
}

type kept struct {
	buf  []byte
	used uint64
}

// keepMappings and keepResident bound the pool.
const (
	keepMappings = 16
	keepResident = 128 << 20
)

var mappings = &mappingPool{free: map[int][]kept{}}

func (p *mappingPool) take(size uint64) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.free[int(size)]
	if len(l) == 0 {
		return nil
	}
	k := l[len(l)-1]
	p.free[int(size)] = l[:len(l)-1]
	p.n--
	p.resident -= k.used
	return k.buf
}

func (p *mappingPool) give(b []byte, used uint64) {
	p.mu.Lock()
	room := p.n < keepMappings && p.resident+used <= keepResident && used <= uint64(len(b))/2
	if room {
		// Counted before zeroing, so that two frees cannot both take the
		// last room.
		p.n++
		p.resident += used
	}
	p.mu.Unlock()
	if !room {
		// Mostly used (zeroing it costs as much as a fresh mapping), or
		// the pool is full.
		_ = syscall.Munmap(b)
		return
	}
	clear(b[:used])
	p.mu.Lock()
	p.free[len(b)] = append(p.free[len(b)], kept{b, used})
	p.mu.Unlock()
}

// memoryAllocator is the allocator instances are created with; nil keeps
// wazero's.
var memoryAllocator experimental.MemoryAllocator = mmapAllocator{}

// trim unmaps the mappings the pool keeps: after an idle period, holding
// their resident pages for a start that may not come costs more than the
// page faults of a fresh mapping.
func (p *mappingPool) trim() {
	p.mu.Lock()
	free := p.free
	p.free, p.n, p.resident = map[int][]kept{}, 0, 0
	p.mu.Unlock()
	for _, l := range free {
		for _, k := range l {
			_ = syscall.Munmap(k.buf)
		}
	}
}
