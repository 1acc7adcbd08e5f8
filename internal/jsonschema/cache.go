package jsonschema

import (
	"container/list"
	"sync"
)

// Cache holds compiled schemas by their text, least recently used first
// out, within a budget of bytes: each entry is charged its text (the key)
// plus an estimate of its compiled form. A schema whose charge exceeds a
// quarter of the budget is compiled for each use and not kept, so one huge
// schema cannot flush all the others. Schemas that fail to compile are kept
// too (charged their text and message), so a broken tool schema is not
// recompiled on every call. A Cache is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int64
	used    int64
	entries map[string]*list.Element
	lru     list.List // of *entry, most recent at the front
}

type entry struct {
	key  string
	s    *Schema
	err  error
	cost int64
}

// NewCache returns a cache that keeps at most maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, entries: map[string]*list.Element{}}
}

// DefaultCacheBytes is the budget of [Shared].
const DefaultCacheBytes = 32 << 20

// Shared is the cache the validate service uses.
var Shared = NewCache(DefaultCacheBytes)

// Get compiles a schema once per distinct text while it stays in the cache.
func (c *Cache) Get(text string) (*Schema, error) {
	c.mu.Lock()
	if el, ok := c.entries[text]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*entry)
		c.mu.Unlock()
		return e.s, e.err
	}
	c.mu.Unlock()
	s, err := compile(text)
	cost := int64(len(text))
	if s != nil {
		cost += s.size
	} else {
		cost += int64(len(err.Error()))
	}
	if cost > c.max/4 {
		return s, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[text]; ok { // compiled meanwhile by another caller
		c.lru.MoveToFront(el)
		e := el.Value.(*entry)
		return e.s, e.err
	}
	for c.used+cost > c.max {
		last := c.lru.Back()
		old := last.Value.(*entry)
		c.lru.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.cost
	}
	c.entries[text] = c.lru.PushFront(&entry{key: text, s: s, err: err, cost: cost})
	c.used += cost
	return s, err
}

// Stats reports the entries held and the bytes they are charged.
func (c *Cache) Stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.used
}
