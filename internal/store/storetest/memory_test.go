package storetest_test

import (
	"testing"

	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store {
		s, err := state.NewMemory(storetest.Options())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMemoryDirectory(t *testing.T) {
	t.Parallel()
	storetest.RunDirectory(t, func(*testing.T) store.Directory { return store.NewMemory() })
}

func TestMemoryRegistry(t *testing.T) {
	t.Parallel()
	storetest.RunRegistry(t, func(*testing.T) store.Registry { return store.NewMemory() })
}

func TestMemorySlotControl(t *testing.T) {
	t.Parallel()
	storetest.RunSlotControl(t, func(*testing.T) store.SlotControl { return store.NewMemorySlots() })
}

func TestMemorySlotCounters(t *testing.T) {
	t.Parallel()
	storetest.RunSlotCounters(t, func(*testing.T) storetest.SlotStore {
		slots := store.NewMemorySlots()
		return struct {
			*store.MemorySlots
			*store.MemorySlotCounts
		}{slots, store.NewMemorySlotCounts(slots)}
	})
}
