package control_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// TestSwapFinishRule hot-swaps the control builtin between its first-party
// build and control-extrarule (the same plugin with one more finish rule)
// while callers keep finishing a node whose output cites no evidence. The
// first-party gate accepts that finish; the variant refuses it. No host
// code changes between the two: the rule arrives in the module.
//
// Each call reads the serving generation's number before and after it runs,
// so a call that saw the same number both times ran on that generation: it
// must get that generation's verdict exactly. Calls that straddle a swap
// may get either verdict, but nothing else. Every call is counted once by
// exactly one generation (none lost or doubled), and every replaced
// generation closes once its last call returned.
func TestSwapFinishRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two wasm modules")
	}
	ctx := context.Background()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	path, err := testdata.Build("./plugins/builtins/control/cmd")
	if err != nil {
		t.Fatal(err)
	}
	first, err := host.ReadSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	variant := host.Source{Name: "control-extrarule", Bytes: testdata.Bytes(t, "control-extrarule")}

	req := finishRequest(t)
	req.Args = json.RawMessage(`{"output":"网站已创建"}`)
	const refusal = "参数不符合工具 builtin_node_finish 的定义：output 须至少引用一条本节点的证据，写作 [ev:<证据ID>]。下一步：只引用本节点或上游工具返回的证据 ID"

	// The self-test runs a finish on the candidate after the host's load
	// check; the calls counted by then are not the callers'.
	var mu sync.Mutex
	probes := map[*host.Plugin]uint64{}
	selfTest := func(ctx context.Context, p *host.Plugin) error {
		if v := p.Builtin(ctx, host.ProbeTenant, req); v.Observation == nil {
			t.Errorf("self-test of %s: no observation", p.Ref())
		}
		mu.Lock()
		probes[p] = p.Stats().Calls
		mu.Unlock()
		return nil
	}
	// The deadline is far from any call's cost: this test is about which
	// generation answers, and a shared, loaded machine must not turn a slow
	// call into a PLUGIN_TIMEOUT here.
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: 10_000}, Capabilities: control.Plugin.Manifest.Capabilities}
	slot, err := h.NewSlot(ctx, "builtin-control", first, pol, selfTest)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	strict := map[uint64]bool{slot.Current().Number: false} // generation → has the extra rule
	gens := []*host.Plugin{slot.Plugin()}
	var issued, accepted, refused, straddled, wrong atomic.Int64
	var firstWrong atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				issued.Add(1)
				before := slot.Current().Number
				v := slot.Builtin(ctx, "acme", req)
				after := slot.Current().Number
				mu.Lock()
				extra := strict[before]
				mu.Unlock()
				o := v.Observation
				isAccepted := o != nil && o.Outcome == abi.OutcomeSuccess && len(v.Effects) == 1 && v.Effects[0].Kind == abi.EffectNodeFinish
				isRefused := o != nil && o.Outcome == abi.OutcomeRejected && o.Code == abi.ArgRejected && o.Message() == refusal && len(v.Effects) == 0
				switch {
				case before != after && (isAccepted || isRefused):
					straddled.Add(1)
				case isAccepted && !extra:
					accepted.Add(1)
				case isRefused && extra:
					refused.Add(1)
				default:
					wrong.Add(1)
					b, _ := json.Marshal(v)
					firstWrong.CompareAndSwap(nil, string(b))
				}
			}
		}()
	}
	for i := 0; i < 8; i++ {
		time.Sleep(40 * time.Millisecond)
		src, extra := variant, true
		if i%2 == 1 {
			src, extra = first, false
		}
		// The table knows the candidate's number before it serves.
		mu.Lock()
		next := slot.Current().Number + 1
		strict[next] = extra
		mu.Unlock()
		info, err := slot.Swap(ctx, src, pol, selfTest)
		if err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
		if info.Number != next {
			t.Fatalf("swap %d installed generation %d, want %d", i, info.Number, next)
		}
		mu.Lock()
		gens = append(gens, slot.Plugin())
		mu.Unlock()
	}
	time.Sleep(40 * time.Millisecond)
	close(stop)
	wg.Wait()

	if wrong.Load() != 0 {
		t.Fatalf("%d wrong verdicts, first: %v", wrong.Load(), firstWrong.Load())
	}
	if accepted.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("accepted %d, refused %d: both generations must have served", accepted.Load(), refused.Load())
	}
	var calls uint64
	for _, p := range gens {
		st := p.Stats()
		calls += st.Calls - probes[p]
		if p != slot.Plugin() && (st.InstancesLive != 0 || st.InFlight != 0) {
			t.Errorf("retired generation %s still holds %d instances, %d calls", st.Plugin, st.InstancesLive, st.InFlight)
		}
	}
	if n := uint64(issued.Load()); calls != n || accepted.Load()+refused.Load()+straddled.Load() != issued.Load() {
		t.Fatalf("issued %d, generations counted %d; accepted %d, refused %d, straddled %d",
			n, calls, accepted.Load(), refused.Load(), straddled.Load())
	}
	hist := slot.History()
	if len(hist) != 9 || hist[1].Ref != "builtin-control@1.0.0-extrarule" || hist[8].Ref != "builtin-control@1.0.0" {
		t.Fatalf("history: %+v", hist)
	}
	t.Logf("%d calls across 8 swaps: %d accepted by the first-party gate, %d refused by the extra rule, %d straddled a swap",
		issued.Load(), accepted.Load(), refused.Load(), straddled.Load())
}
