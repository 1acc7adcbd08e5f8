package server

import (
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/loop"
)

// observable is a model that wants to know the outcome of each tool message
// beside its text (model/scripted, whose turns may expect an outcome).
type observable interface {
	SetObserver(scripted.Observer)
}

// observer reports the outcome of the tool message that answered callID:
// the k-th tool message of a node answers the k-th TOOL event of that node,
// because the loop emits one TOOL event per tool message, in order. The
// newest node holding the call is the one asked about.
func (ss *session) observer() scripted.Observer {
	return func(callID string) (scripted.Observed, bool) {
		all, _ := ss.since(0)
		seen := map[string]bool{}
		var nodes []string
		for i := len(all) - 1; i >= 0; i-- {
			if n := all[i].Node; n != "" && !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
		for _, n := range nodes {
			msgs, err := ss.store.Messages(n)
			if err != nil {
				continue
			}
			k, found := -1, false
			for _, m := range msgs {
				if m.Role != model.RoleTool {
					continue
				}
				k++
				if m.ToolCallID == callID {
					found = true
					break
				}
			}
			if !found {
				continue
			}
			i := -1
			for _, e := range all {
				if e.Kind != loop.KindTool || e.Node != n {
					continue
				}
				if i++; i == k {
					return scripted.Observed{Outcome: e.Outcome, Code: e.Name, Wire: e.Code}, e.Outcome != ""
				}
			}
			return scripted.Observed{}, false
		}
		return scripted.Observed{}, false
	}
}
