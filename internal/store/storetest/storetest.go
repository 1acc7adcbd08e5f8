// Package storetest is the conformance suite of state.Store: the same
// table tests run against any implementation, so that the durable stores
// behave exactly like the in-memory state.Memory.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) state.Store {
//			s, err := state.NewMemory(storetest.Options())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// A store that also implements Reopener is closed and opened again in the
// durability cases; the others skip them.
package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/state"
)

// Clock is the time of every store the suite opens.
var Clock = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Options are the options open must give every store: session "s1", the
// reserved scratch key "_phase", the bypass tool "ping" and a fixed Clock.
func Options() state.Options {
	return state.Options{SessionID: "s1", ReservedKeys: []string{"_phase"}, BypassTools: []string{"ping"},
		Platform: map[string]json.RawMessage{"tenant": json.RawMessage(`"acme"`)},
		Now:      func() time.Time { return Clock }}
}

// Reopener is a durable store that can be closed and opened again on the
// same database, as a process that restarts does.
type Reopener interface {
	state.Store
	// Reopen closes the store and returns a new one over the same session.
	Reopen(t testing.TB) state.Store
}
