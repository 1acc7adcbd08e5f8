package chain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/guards/argpolicy"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
	"github.com/agentwarden/warden/plugins/guards/writegate"
)

// countingCaller is a business tool that counts its calls.
type countingCaller struct{ n atomic.Int64 }

func (c *countingCaller) CallTool(_ context.Context, _ string, args json.RawMessage) (chain.Response, error) {
	c.n.Add(1)
	return chain.Response{Content: args}, nil
}

// swapCase is one hot swap of a first-party guard for a changed generation
// of it: a call that behaves one way on the first-party rules and the other
// way on the variant's.
type swapCase struct {
	name    string
	slot    string // the chain position
	selects string // the first-party plugin, by its manifest name
	variant string // the fixture under internal/testdata/guests
	ref     string // the variant's plugin@version
	call    chain.Call
	before  bool // the call phase the slot also guards after the call
	// old and new tell the first-party and the variant outcome apart.
	old, new func(chain.Result) bool
}

// TestHotSwapChangesRules loads a first-party guard as wasm into a
// generation slot, runs guarded calls through a chain on four goroutines,
// and swaps in a changed generation of the same guard under load. No host
// code changes: the rule lives in the plugin. Every call that started after
// the swap returned follows the new rule, every call that ended before it
// began follows the old one, each call ends as exactly one of the two, and
// the business tool ran once per call that was let through.
func TestHotSwapChangesRules(t *testing.T) {
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	succeeded := func(r chain.Result) bool {
		return r.Invoked && r.Observation.Outcome == abi.OutcomeSuccess
	}
	cases := []swapCase{
		{
			name: "a WriteGate that also gates a read tool", slot: "WriteGate",
			selects: "writegate", variant: "writegate-gatesread", ref: "writegate@1.1.0",
			call: chain.Call{Tenant: "acme", Tool: "search_articles", Args: []byte(`{"q":"Q3"}`),
				Contract: json.RawMessage(`{"sideEffect":"NONE"}`)},
			before: true,
			old:    succeeded,
			new: func(r chain.Result) bool {
				return !r.Invoked && r.Observation.Outcome == abi.OutcomeDeferred && r.Observation.Code == abi.ApprovalRequired &&
					r.Observation.Message() == "该写操作须经用户确认。下一步：调用 builtin_node_approval 申请用户确认，toolName 填 search_articles"
			},
		},
		{
			name: "a ParamContract with another USER normalisation", slot: "ParamContract",
			selects: "paramcontract", variant: "paramcontract-nopunct", ref: "paramcontract@1.1.0",
			call: chain.Call{Tenant: "acme", Tool: "create_article", Args: []byte(`{"title":"Q3 launch"}`),
				Contract: json.RawMessage(`{"args":{"title":{"sources":["USER"],"label":"标题"}}}`),
				State:    map[string]json.RawMessage{string(abi.CapStateConversation): json.RawMessage(`{"userMessages":["标题就叫 q3-launch 吧"]}`)}},
			old: func(r chain.Result) bool {
				return !r.Invoked && r.Observation.Outcome == abi.OutcomeRejected && r.Observation.Code == abi.ParamProvenanceAskUser
			},
			new: succeeded,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSwap(ctx, t, h, tc) })
	}
}

func runSwap(ctx context.Context, t *testing.T, h *host.Host, tc swapCase) {
	// The slot serves the first-party module bound to its plugin, as
	// warden's first-party slots do; the variant is a module of one plugin.
	path, err := testdata.Build("./plugins/firstparty/cmd")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := host.SelectPlugin(shared, tc.selects)
	selfTest := func(ctx context.Context, p *host.Plugin) error {
		if v := p.Guard(ctx, "self-test", &abi.Request{ABI: abi.Version, Kind: abi.RoleGuard, Phase: abi.PhaseBefore, Tool: "t",
			Args: json.RawMessage(`{}`)}); !v.Pass {
			return fmt.Errorf("self-test: %+v", v)
		}
		return nil
	}
	// The slot allows its first-party plugin's capabilities.
	pol := host.Policy{Capabilities: map[string][]abi.Capability{
		"WriteGate": writegate.Plugin.Manifest.Capabilities, "ParamContract": paramcontract.Plugin.Manifest.Capabilities,
	}[tc.slot]}
	slot, err := h.NewSlot(ctx, tc.slot, host.Source{Name: tc.slot, Bytes: first}, pol, selfTest)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	firstPlugin := slot.Plugin()
	// A neighbour slot serves another plugin of the same module, and
	// keeps it through the swap.
	neighbourSrc := host.Source{Name: "ArgPolicy", Bytes: host.SelectPlugin(shared, "argpolicy")}
	neighbour, err := h.NewSlot(ctx, tc.slot+"-neighbour", neighbourSrc, host.Policy{Capabilities: argpolicy.Plugin.Manifest.Capabilities}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer neighbour.Close()
	variant := testdata.Bytes(t, tc.variant) // built before the load starts
	tool := &countingCaller{}
	c := &chain.Chain{Before: []chain.Guard{slot}, Invoker: &chain.Invoker{Caller: tool}}
	if tc.before {
		c.After = []chain.Guard{slot}
	}

	// swapping is set just before Swap is called, swapped just after it
	// returned; each call notes which were set when it started and ended.
	var swapping, swapped atomic.Bool
	var issued, oldRule, newRule, invoked, done atomic.Int64
	var mu sync.Mutex
	var wrong []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				call := tc.call
				call.CallID = fmt.Sprintf("call-%d-%d", w, i)
				startedAfter := swapped.Load()
				issued.Add(1)
				res := c.Run(ctx, call)
				endedBefore := !swapping.Load()
				isOld, isNew := tc.old(res), tc.new(res)
				if res.Invoked {
					invoked.Add(1)
				}
				switch {
				case isOld && !isNew && !startedAfter:
					oldRule.Add(1)
				case isNew && !isOld && !endedBefore:
					newRule.Add(1)
				default:
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s (started after the swap %v, ended before it %v): invoked %v, %s %s %q",
						call.CallID, startedAfter, endedBefore, res.Invoked, res.Observation.Outcome, res.Observation.Code, res.Observation.Message()))
					mu.Unlock()
				}
				done.Add(1)
			}
		}(w)
	}
	waitFor := func(n int64) {
		deadline := time.Now().Add(2 * time.Minute)
		for done.Load() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(40)
	swapping.Store(true)
	info, err := slot.Swap(ctx, host.Source{Name: tc.variant, Bytes: variant}, pol, selfTest)
	swapped.Store(true)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("swap: %v", err)
	}
	waitFor(done.Load() + 40)
	close(stop)
	wg.Wait()

	if len(wrong) > 0 {
		t.Errorf("%d calls followed neither rule, or the wrong one for when they ran; first: %s", len(wrong), wrong[0])
	}
	if issued.Load() != oldRule.Load()+newRule.Load()+int64(len(wrong)) || done.Load() != issued.Load() {
		t.Errorf("issued %d, done %d, old rule %d, new rule %d, wrong %d", issued.Load(), done.Load(), oldRule.Load(), newRule.Load(), len(wrong))
	}
	if oldRule.Load() < 40 || newRule.Load() < 40 {
		t.Errorf("old rule %d, new rule %d: want at least 40 calls on each side of the swap", oldRule.Load(), newRule.Load())
	}
	// The business tool ran once per call let through, never twice.
	if tool.n.Load() != invoked.Load() {
		t.Errorf("the tool ran %d times for %d invoked calls", tool.n.Load(), invoked.Load())
	}
	if info.Ref != tc.ref || slot.Current().Ref != tc.ref || len(slot.History()) != 2 {
		t.Errorf("generation %s, current %s, %d generations; want %s after one swap", info.Ref, slot.Current().Ref, len(slot.History()), tc.ref)
	}
	if slot.Plugin().ModuleDigest() != host.Digest(variant) || firstPlugin.ModuleDigest() != host.Digest(shared) {
		t.Errorf("the slot serves module %s, was %s; want the variant %s, was the first-party module %s",
			slot.Plugin().ModuleDigest(), firstPlugin.ModuleDigest(), host.Digest(variant), host.Digest(shared))
	}
	if g := neighbour.Current(); g.Number != 1 || g.Digest != host.Digest(neighbourSrc.Bytes) || neighbour.Plugin().ModuleDigest() != host.Digest(shared) {
		t.Errorf("the neighbour slot moved: %+v", g)
	}
	if st := firstPlugin.Stats(); st.InstancesLive != 0 || st.InFlight != 0 {
		t.Errorf("retired generation %s still holds %d instances, %d calls", st.Plugin, st.InstancesLive, st.InFlight)
	}
	t.Logf("%s: %d calls on the first-party rule, %d on %s, tool ran %d times", tc.slot, oldRule.Load(), newRule.Load(), tc.ref, tool.n.Load())
}
