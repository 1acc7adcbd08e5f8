package jsonschema

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// bigSchema is a distinct tool schema of about n bytes: many properties
// with descriptions and enums, the shape of a large generated schema.
func bigSchema(id, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"title":"tool %d","type":"object","properties":{`, id)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","description":"parameter %d of tool %d, described at some length for the model",`+
			`"enum":["a%d","b%d","c%d"],"maxLength":%d}`, i, i, id, i, i, i, 10+i%50)
	}
	b.WriteString(`}}`)
	return b.String()
}

// denseSchema has n properties of a few bytes each.
func denseSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"integer"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// retained measures the heap a value built by f keeps after a collection.
func retained(f func() any) (uint64, any) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0, v
	}
	return after.HeapAlloc - before.HeapAlloc, v
}

// TestEstimateCoversCompiledSize checks that a cache entry's charge is at
// least what a compiled schema keeps on the heap, for small tool schemas
// and for large ones. Not parallel: it reads the heap.
func TestEstimateCoversCompiledSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
	}{
		{"15-property tool", benchSchema},
		{"pydantic", pydanticSchema},
		{"64 kB", bigSchema(1, 64<<10)},
		{"256 kB", bigSchema(2, 256<<10)},
		{"4,000 small properties", denseSchema(4000)},
		{"100 nested items", strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)},
		{"booleans", `{"allOf":[` + strings.Repeat(`true,`, 2000) + `false]}`},
	} {
		const n = 4
		used, keep := retained(func() any {
			out := make([]*Schema, n)
			for i := range out {
				out[i] = MustCompile(tc.text)
			}
			return out
		})
		runtime.KeepAlive(keep)
		per := used / n
		s := MustCompile(tc.text)
		charge := s.size
		t.Logf("%s: %d bytes of text, %d bytes retained (%.1f per byte), charged %d", tc.name, len(tc.text), per, float64(per)/float64(len(tc.text)), charge)
		if int64(per) > charge {
			t.Errorf("%s: compiled schema keeps %d bytes, but is charged %d", tc.name, per, charge)
		}
	}
}

// TestCacheBoundsMemory is issue #12: many distinct 256 kB schemas must not
// pin memory beyond the cache's budget (kept all, these 32 keep ~64 MB).
func TestCacheBoundsMemory(t *testing.T) {
	const budget = 16 << 20
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = bigSchema(i, 256<<10)
	}
	used, keep := retained(func() any {
		c := NewCache(budget)
		for _, s := range texts {
			if _, err := c.Get(s); err != nil {
				t.Fatal(err)
			}
		}
		n, b := c.Stats()
		if b > budget || n == 0 || n >= len(texts) {
			t.Fatalf("cache holds %d entries, %d bytes; budget %d", n, b, budget)
		}
		return c
	})
	runtime.KeepAlive(keep)
	runtime.KeepAlive(texts)
	t.Logf("32 schemas of 256 kB through a 16 MiB cache retain %d bytes", used)
	if used > 2*budget {
		t.Fatalf("retained %d bytes, more than twice the %d budget", used, budget)
	}
}

func TestCacheLRU(t *testing.T) {
	t.Parallel()
	texts := []string{`{"type":"string"}`, `{"type":"integer"}`, `{"type":"boolean"}`, `{"type":"object"}`, `{"type":"array"}`}
	cost := func(s string) int64 { return int64(len(s)) + MustCompile(s).size }
	var budget int64
	for _, s := range texts {
		budget += cost(s)
	}
	cache := NewCache(budget) // room for exactly these five
	for _, s := range texts {
		if _, err := cache.Get(s); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := cache.Get(texts[0]) // now the most recent; texts[1] the least
	if again, _ := cache.Get(texts[0]); again != first {
		t.Fatal("a cached schema was compiled again")
	}
	if n, used := cache.Stats(); n != 5 || used != budget {
		t.Fatalf("entries = %d, bytes = %d; want 5, %d", n, used, budget)
	}
	if _, err := cache.Get(`{"type":"null"}`); err != nil { // shorter than texts[1], which it evicts
		t.Fatal(err)
	}
	cache.mu.Lock()
	_, kept0 := cache.entries[texts[0]]
	_, kept1 := cache.entries[texts[1]]
	cache.mu.Unlock()
	if !kept0 || kept1 {
		t.Fatalf("after eviction: most recent kept %v, least recent kept %v; want true, false", kept0, kept1)
	}
	if n, used := cache.Stats(); n != 5 || used > budget {
		t.Fatalf("entries = %d, bytes = %d, budget %d", n, used, budget)
	}
}

func TestCacheKeepsErrorsAndSkipsHuge(t *testing.T) {
	t.Parallel()
	c := NewCache(1 << 20)
	bad := `{"$ref":"https://example.com/a.json"}`
	_, err1 := c.Get(bad)
	_, err2 := c.Get(bad)
	if !errors.Is(err1, ErrRemoteRef) || err1 != err2 {
		t.Fatalf("errors %v / %v: want the same cached ErrRemoteRef", err1, err2)
	}
	huge := bigSchema(9, 64<<10) // charged more than a quarter of 1 MiB
	s1, err := c.Get(huge)
	if err != nil {
		t.Fatal(err)
	}
	if s2, _ := c.Get(huge); s1 == s2 {
		t.Fatal("a schema charged more than a quarter of the budget was cached")
	}
	if n, _ := c.Stats(); n != 1 {
		t.Fatalf("entries = %d, want 1 (the error)", n)
	}
}

func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewCache(256 << 10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				s, err := c.Get(fmt.Sprintf(`{"maxLength":%d}`, (g*7+i)%40))
				if err != nil || s == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, used := c.Stats(); used > 256<<10 {
		t.Fatalf("bytes = %d over budget", used)
	}
}
