package contract

import (
	"strings"
	"testing"
)

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

func TestParseTool(t *testing.T) {
	t.Parallel()
	tool, err := ParseTool("create_site", []byte(`{"sideEffect":"WRITE","success":{"path":"code","op":"EQ","value":200},
		"verify":{"tool":"query_site","args":{"title":{"from":"call.title"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name != "create_site" || !tool.IsWrite() || tool.Verify == nil || tool.Verify.Tool != "query_site" {
		t.Fatalf("tool = %+v", tool)
	}
	read, err := ParseTool("search", []byte(`{"fallback":"search_cache"}`))
	if err != nil || read.Fallback != "search_cache" {
		t.Fatalf("fallback: %v %+v", err, read)
	}
	if _, err := ParseTool("create_site", []byte(`{"sideEffect":"WRITE"}`)); err == nil || !strings.Contains(err.Error(), "rule 6") {
		t.Fatalf("a rule of the tool alone still applies: %v", err)
	}
}
