package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/server"
)

// tenantsServe starts warden serve (the example MCP server, the scripted
// model, the first-party plugins as wasm, a SQLite store) for tenants
// tenants of one agent, with extra flags. It returns the base URL and each
// tenant's key.
func tenantsServe(t *testing.T, tenants int, extra ...string) (base string, keys []string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	skills, _, script := serveFixture(t)
	var list []string
	for i := range tenants {
		k := fmt.Sprintf("tenant-key-%06d-abcdef", i)
		keys = append(keys, k)
		list = append(list, fmt.Sprintf(`{"tenant":"t%06d","agent":"cms","keys":[%q]}`, i, k))
	}
	keyFile := filepath.Join(t.TempDir(), "keys.json")
	writeFile(t, keyFile, `{"tenants":[`+strings.Join(list, ",")+`],"admin_keys":["`+adminKey+`"]}`)
	args := append([]string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keyFile, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", bin, "--shutdown-grace", "5s",
		"--store", "sqlite:" + filepath.Join(t.TempDir(), "warden.db"), "--tenant-rate", "0"}, extra...)
	base, _ = startServe(t, args)
	return base, keys
}

// tenantMessage opens a session for key and sends it one message (one
// query, one finish), which must end DONE.
func tenantMessage(base, key string) error {
	do := func(method, path, body string, out any) error {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}
	var sess struct{ ID string }
	if err := do("POST", "/v1/sessions", "", &sess); err != nil {
		return err
	}
	var res struct {
		Task struct{ Status, Output string }
	}
	if err := do("POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", `{"text":"find space sp-1"}`, &res); err != nil {
		return err
	}
	if res.Task.Status != "DONE" || res.Task.Output != "found Marketing" {
		return fmt.Errorf("task %+v", res.Task)
	}
	return nil
}

// sendMessages runs one message for each key, workers at a time.
func sendMessages(t *testing.T, base string, keys []string, workers int) {
	t.Helper()
	jobs := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				if err := tenantMessage(base, k); err != nil {
					mu.Lock()
					errs = append(errs, k+": "+err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for _, k := range keys {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d messages failed: %v", len(errs), len(keys), errs[:min(len(errs), 5)])
	}
}

// pluginInstances reads this process's plugin instances from GET
// /admin/v1/instances.
func pluginInstances(t *testing.T, base string) server.PluginInstances {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/admin/v1/instances", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Instances []server.Instance }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("instances: %d %v", resp.StatusCode, err)
	}
	for _, in := range out.Instances {
		if in.Self && in.Plugins != nil {
			return *in.Plugins
		}
	}
	t.Fatalf("no plugin instances in %+v", out.Instances)
	return server.PluginInstances{}
}

// slotStats reads every slot's counters from GET /admin/v1/slots.
func slotStats(t *testing.T, base string) map[string]server.SlotStats {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/admin/v1/slots", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Slots []server.SlotInfo }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("slots: %d %v", resp.StatusCode, err)
	}
	m := map[string]server.SlotStats{}
	for _, s := range out.Slots {
		m[s.Name] = s.Stats
	}
	return m
}

// TestTenantsInstanceBudget: 20 tenants of a real serve, each sending one
// message, with room for 12 plugin instances and an idle time of 300ms:
// every message is answered, no start goes over the budget (the process's
// peak), idle instances are evicted to make room, and once the tenants
// are idle their instances are reclaimed until only the plugins' spares
// (which hold no tenant's data) are left. Counts only, polled.
func TestTenantsInstanceBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts warden serve with the first-party plugins")
	}
	const tenants, budget = 20, 12
	base, keys := tenantsServe(t, tenants, "--plugin-max-instances", strconv.Itoa(budget), "--plugin-instance-idle", "300ms")
	sendMessages(t, base, keys, 4)
	u := pluginInstances(t, base)
	if u.MaxInstances != budget || u.Peak > budget || u.Evicted == 0 {
		t.Fatalf("after %d tenants: %+v, want a peak within %d and evictions", tenants, u, budget)
	}
	slots := slotStats(t, base)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		u = pluginInstances(t, base)
		if u.Reclaimed > 0 && u.Live == u.Idle && u.Live <= len(slots) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reclaimed: %+v (%d plugins)", u, len(slots))
		}
	}
	if u.Refused != 0 {
		t.Fatalf("calls refused for want of room: %+v", u)
	}
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestTenantsMemoryScale (WARDEN_BENCH_TENANTS=1, make bench-tenants): a
// real serve on its defaults (instance budget included) with an idle time
// of WARDEN_BENCH_IDLE (default 5s); 1, then 100, then 1,000 tenants
// (cumulative) each send one message. It reports the process's RSS and Go
// heap in use at each step, after the idle time and after the runtime
// returned freed memory, and each plugin's added latency for a cold
// tenant (the mean call of the tenants' first message less that of their
// second). It fails if RSS at 1,000 tenants passes 1.5 GB or the heap
// after the idle time is not within 25% of that at one tenant.
func TestTenantsMemoryScale(t *testing.T) {
	if os.Getenv("WARDEN_BENCH_TENANTS") == "" {
		t.Skip("set WARDEN_BENCH_TENANTS=1 (make bench-tenants)")
	}
	idle := 5 * time.Second
	if v := os.Getenv("WARDEN_BENCH_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		idle = d
	}
	total := 1000
	if v := os.Getenv("WARDEN_BENCH_TOTAL"); v != "" {
		// A smaller last step, to look at the growth (not the measurement).
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("WARDEN_BENCH_TOTAL=%q: want a number of at least 100", v)
		}
		total = n
	}
	base, keys := tenantsServe(t, total, "--plugin-instance-idle", idle.String())
	t.Logf("started: RSS %s, heap in use %s", mb(rss(t)), mb(heapInUse()))
	type step struct {
		n         int
		rss, heap int64
		u         server.PluginInstances
	}
	var steps []step
	done := 0
	var cold, warm map[string]server.SlotStats
	ns := []int{1, 100}
	if total > 100 {
		ns = append(ns, total)
	}
	for _, n := range ns {
		before := slotStats(t, base)
		sendMessages(t, base, keys[done:n], 4)
		after := slotStats(t, base)
		if n == 100 {
			cold = diffStats(before, after)
			// The same tenants again, their instances warm.
			sendMessages(t, base, keys[done:n], 4)
			warm = diffStats(after, slotStats(t, base))
		}
		done = n
		steps = append(steps, step{n, rss(t), heapInUse(), pluginInstances(t, base)})
		if dir := os.Getenv("WARDEN_BENCH_PROFILE"); dir != "" {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", n)))
			if err != nil {
				t.Fatal(err)
			}
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		s := steps[len(steps)-1]
		t.Logf("N=%d: RSS %s, heap in use %s, instances %d (idle %d, %s linear memory), evicted %d, budget waits %d",
			n, mb(s.rss), mb(s.heap), s.u.Live, s.u.Idle, mb(s.u.MemoryBytes), s.u.Evicted, s.u.Waits)
	}
	time.Sleep(idle + idle/2)
	for deadline := time.Now().Add(idle + time.Minute); ; time.Sleep(100 * time.Millisecond) {
		u := pluginInstances(t, base)
		if u.Live == u.Idle && u.Live <= len(cold) || time.Now().After(deadline) {
			break
		}
	}
	u := pluginInstances(t, base)
	idleRSS, idleHeap := rss(t), heapInUse()
	debug.FreeOSMemory()
	freedRSS := rss(t)
	t.Logf("after %v idle: instances %d, reclaimed %d; RSS %s, heap in use %s; RSS after returning freed memory %s",
		idle+idle/2, u.Live, u.Reclaimed, mb(idleRSS), mb(idleHeap), mb(freedRSS))
	names := make([]string, 0, len(cold))
	for name := range cold {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, w := cold[name], warm[name]
		if c.Calls == 0 || w.Calls == 0 {
			continue
		}
		cm, wm := c.LatencyMsTotal/float64(c.Calls), w.LatencyMsTotal/float64(w.Calls)
		t.Logf("cold tenant %-18s first message %.3f ms/call, second %.3f ms/call: +%.3f ms (%d instances started for %d calls)",
			name, cm, wm, cm-wm, c.InstancesCreated, c.Calls)
	}
	if r := steps[len(steps)-1].rss; total == 1000 && r > 1500<<20 {
		t.Errorf("RSS at %d tenants is %s, above 1.5 GB", total, mb(r))
	}
	if h1 := steps[0].heap; float64(idleHeap) > 1.25*float64(h1) {
		t.Errorf("heap in use after the idle time is %s, more than 25%% above %s at one tenant", mb(idleHeap), mb(h1))
	}
}

// diffStats is each slot's counters of b less those of a.
func diffStats(a, b map[string]server.SlotStats) map[string]server.SlotStats {
	out := map[string]server.SlotStats{}
	for name, s := range b {
		p := a[name]
		out[name] = server.SlotStats{Calls: s.Calls - p.Calls, LatencyMsTotal: s.LatencyMsTotal - p.LatencyMsTotal,
			InstancesCreated: s.InstancesCreated - p.InstancesCreated}
	}
	return out
}

func mb(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/(1<<20)) }
