package mcp_test

import (
	"testing"

	"github.com/agentwarden/warden/internal/tools/mcp"
)

// TestStdoutJSONNoise: JSON lines on a stdio server's stdout that are not
// JSON-RPC messages (a structured logger's) are skipped and counted too;
// they would end the session were they passed to the SDK.
func TestStdoutJSONNoise(t *testing.T) {
	t.Parallel()
	c, err := mcp.Dial(t.Context(), mcp.Config{Command: []string{"sh", "-c",
		`echo '{"level":"info","msg":"starting"}'; echo '[{"level":"debug"}]'; echo '{"jsonrpc":"1.0"}'; exec "$0" "$@"`, cmsBin, "-page-size", pageSize}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantContent(t, call(t, c, "query_space", `{"spaceId":"sp-1"}`),
		`{"code":200,"msg":"ok","data":{"spaceId":"sp-1","name":"Marketing","websiteCount":1}}`)
	if n := c.SkippedLines(); n != 3 {
		t.Fatalf("skipped %d lines, want 3", n)
	}
}
