package contract

import "testing"

func TestFallback(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("docs.search", []byte(`{"tools":{"search_docs":{"fallback":"search_cache"},"search_cache":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tools["search_docs"].Fallback; got != "search_cache" {
		t.Fatalf("fallback = %q", got)
	}
	if got := c.Tools["search_cache"].Fallback; got != "" {
		t.Fatalf("unset fallback = %q", got)
	}
}
