package scenario

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/loop"
)

// FormatEvent renders one trace event as a line of the readable trace:
//
//	#4 TOOL create_site DEFERRED APPROVAL_REQUIRED (agent_runtime.42221) stalls=0 RUNNING: 该写操作须经用户确认。下一步：…
func FormatEvent(e loop.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %-7s", e.Seq, e.Kind)
	if strings.Contains(e.Node, ".") {
		// A node of a task scenario's graph.
		b.WriteString(" [" + e.Node + "]")
	}
	for _, s := range []string{e.Tool, e.Outcome} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	if e.Name != "" {
		fmt.Fprintf(&b, " %s (%s)", e.Name, e.Code)
	}
	fmt.Fprintf(&b, " stalls=%d", e.Stalls)
	if e.Status != "" {
		b.WriteString(" " + e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + strings.ReplaceAll(e.Message, "\n", " ⏎ "))
	}
	return b.String()
}

// FormatGraph renders a task scenario's graph, one node a line:
//
//	t1.n1 space.finder DONE
//	t1.n2 site.builder DONE upstream t1.n1 → create_site
//	t1.n2.d1 space.finder DONE ← t1.n2
func FormatGraph(g []GraphNode) string {
	var b strings.Builder
	for _, n := range g {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}
