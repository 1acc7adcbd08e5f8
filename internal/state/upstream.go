package state

// MaxUpstream bounds the nodes an upstream walk visits: a task graph with
// its delegated pre-nodes stays far below it, and a corrupt graph cannot
// make a view unbounded.
const MaxUpstream = 256

// UpstreamClosure is every node whose evidence the node may use
// (CONTRACT_SPEC §9, §5.3: "本节点及全部上游节点（沿依赖边追溯，含委派）"):
// its upstream nodes, theirs, and so on, delegated pre-nodes included (a
// delegate is in its caller's Upstream), nearest first: breadth first over
// upstreamOf, each node once, the node itself never, at most MaxUpstream.
// A node upstreamOf does not know ends its branch; an error of upstreamOf
// is returned.
func UpstreamClosure(id string, direct []string, upstreamOf func(id string) ([]string, error)) ([]string, error) {
	seen := map[string]bool{id: true}
	var out []string
	queue := direct
	for len(queue) > 0 && len(out) < MaxUpstream {
		var next []string
		for _, u := range queue {
			if seen[u] || len(out) == MaxUpstream {
				continue
			}
			seen[u] = true
			out = append(out, u)
			up, err := upstreamOf(u)
			if err != nil {
				return nil, err
			}
			next = append(next, up...)
		}
		queue = next
	}
	return out, nil
}
