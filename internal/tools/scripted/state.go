package scripted

import (
	"encoding/json"
	"sort"
	"strconv"
	"sync"
)

// State is the tools' data: collections of JSON records by id. It is safe
// for concurrent use.
type State struct {
	mu    sync.Mutex
	colls map[string]map[string]json.RawMessage
	seq   int
}

// NewState returns an empty State.
func NewState() *State { return &State{colls: map[string]map[string]json.RawMessage{}} }

// Put stores rec under coll and id, replacing any record there.
func (s *State) Put(coll, id string, rec json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.colls[coll] == nil {
		s.colls[coll] = map[string]json.RawMessage{}
	}
	s.colls[coll][id] = append(json.RawMessage(nil), rec...)
}

// Get returns the record under coll and id.
func (s *State) Get(coll, id string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.colls[coll][id]
	return rec, ok
}

// List returns the records of coll ordered by id.
func (s *State) List(coll string) []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.colls[coll]))
	for id := range s.colls[coll] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		out[i] = s.colls[coll][id]
	}
	return out
}

// NextID returns prefix-N with N counting up across the State from 1.
func (s *State) NextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return prefix + "-" + strconv.Itoa(s.seq)
}
