package jsonschema

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"
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
	// flights are the compiles in progress, by text: callers of one text
	// wait for one compile.
	flights map[string]*flight
	// slow remembers how long the last compile of a schema too big to keep
	// took, by digest of its text (at most maxSlow entries), so a caller
	// whose deadline leaves less time than that is told at once.
	slow map[[sha256.Size]byte]time.Duration
}

type flight struct {
	done chan struct{}
	s    *Schema
	err  error
}

const maxSlow = 256

type entry struct {
	key  string
	s    *Schema
	err  error
	cost int64
}

// NewCache returns a cache that keeps at most maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, entries: map[string]*list.Element{}, flights: map[string]*flight{},
		slow: map[[sha256.Size]byte]time.Duration{}}
}

// DefaultCacheBytes is the budget of [Shared].
const DefaultCacheBytes = 32 << 20

// Shared is the cache the validate service uses.
var Shared = NewCache(DefaultCacheBytes)

// Get compiles a schema once per distinct text while it stays in the cache.
func (c *Cache) Get(text string) (*Schema, error) { return c.GetContext(context.Background(), text) }

// GetContext is Get within ctx: the compile of a schema a sandboxed guest
// named is charged to the guest's deadline. It returns an error wrapping
// ctx's error when ctx ends before the schema is compiled, without waiting
// for the compile: the library cannot be interrupted, so the compile
// finishes in the background (and is cached if it fits), and callers of the
// same text wait for that one compile rather than starting another. A schema
// too big to keep whose last compile took longer than ctx's deadline leaves
// is refused at once.
func (c *Cache) GetContext(ctx context.Context, text string) (*Schema, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jsonschema: compile: %w", err)
	}
	c.mu.Lock()
	if el, ok := c.entries[text]; ok {
		c.lru.MoveToFront(el)
		e := el.Value.(*entry)
		c.mu.Unlock()
		return e.s, e.err
	}
	f, ok := c.flights[text]
	if !ok {
		if dl, has := ctx.Deadline(); has && len(text) > 0 {
			if took, seen := c.slow[sha256.Sum256([]byte(text))]; seen && time.Until(dl) < took {
				c.mu.Unlock()
				return nil, fmt.Errorf("jsonschema: compile: takes %v: %w", took.Round(time.Millisecond), context.DeadlineExceeded)
			}
		}
		text = strings.Clone(text) // kept: the caller's may alias a buffer it reuses
		f = &flight{done: make(chan struct{})}
		c.flights[text] = f
		go c.compile(text, f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.s, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("jsonschema: compile: %w", ctx.Err())
	}
}

// compile runs one flight and files its result.
func (c *Cache) compile(text string, f *flight) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil { // a library panic must not end the process
			f.s, f.err = nil, fmt.Errorf("jsonschema: %w: compiler panic: %v", ErrUnsupported, r)
		}
		c.file(text, f, time.Since(start))
		close(f.done)
	}()
	f.s, f.err = compile(text)
}

func (c *Cache) file(text string, f *flight, took time.Duration) {
	cost := int64(len(text))
	if f.s != nil {
		cost += f.s.size
	} else {
		cost += int64(len(f.err.Error()))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flights, text)
	if cost > c.max/4 {
		if len(c.slow) >= maxSlow {
			for k := range c.slow { // drop any one
				delete(c.slow, k)
				break
			}
		}
		c.slow[sha256.Sum256([]byte(text))] = took
		return
	}
	if _, ok := c.entries[text]; ok {
		return
	}
	for c.used+cost > c.max {
		last := c.lru.Back()
		old := last.Value.(*entry)
		c.lru.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.cost
	}
	c.entries[text] = c.lru.PushFront(&entry{key: text, s: f.s, err: f.err, cost: cost})
	c.used += cost
}

// Stats reports the entries held and the bytes they are charged.
func (c *Cache) Stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.used
}
