package scenario

import (
	"fmt"
	"strings"

	"github.com/agentwarden/warden/loop"
)

// FormatEvent renders one trace event as a line of the readable trace:
//
//	#4 TOOL create_site DEFERRED APPROVAL_REQUIRED (agent_runtime.42221) by WriteGate (writegate@1.0.0 gen 1) stalls=0 RUNNING: 该写操作须经用户确认。下一步：…
//	#5 GUARD create_site REJECTED ARG_REJECTED (agent_runtime.40032) by domainguard@0.1.0 stalls=0 SHADOW: …
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
	if e.Kind == loop.KindGuard || e.Guard != "" {
		b.WriteString(" by " + by(e))
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

// by names the guard and plugin that decided an event: "WriteGate
// (writegate@1.0.0 gen 1)", "domainguard@0.1.0".
func by(e loop.Event) string {
	switch {
	case e.Plugin == "" || e.Plugin == e.Guard && e.Generation == 0:
		return e.Guard
	case e.Generation == 0:
		return fmt.Sprintf("%s (%s)", e.Guard, e.Plugin)
	}
	return fmt.Sprintf("%s (%s gen %d)", e.Guard, e.Plugin, e.Generation)
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
