package control_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// wasm is the plugin's real wasm build, loaded once for every test.
var wasm *host.Plugin

func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx := context.Background()
		h, err := host.New(host.Options{CacheDir: cacheDir()})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer h.Close(ctx)
		path, err := testdata.Build("./plugins/builtins/control/cmd")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		src, err := host.ReadSource(path, "")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if wasm, err = h.Load(ctx, src, host.Policy{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

func cacheDir() string {
	dir := testdata.Root() + "/bin/cache"
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// tc is one builtin call and what it must produce.
type tc struct {
	name   string
	tool   string
	args   string
	state  map[abi.Capability]any
	locale abi.Locale

	outcome abi.Outcome
	code    abi.Code
	msg     string
	effects string // JSON array of {kind, payload}; "" = none
	data    string // JSON; "" = none
}

// run calls the builtin natively and through the wasm build, requires the
// same verdict from both, and checks it against the case.
func run(t *testing.T, tt tc) {
	t.Helper()
	ctx := context.Background()
	req := abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: tt.tool, Args: json.RawMessage(tt.args), Locale: tt.locale,
		State: map[string]json.RawMessage{}}
	for k, v := range tt.state {
		b, ok := v.(string)
		raw := json.RawMessage(b)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		req.State[string(k)] = raw
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := guest.NewNative(control.Plugin, 0)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := n.Call(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if nv.Observation != nil {
		nv.Observation.Locale = tt.locale
	}
	wv := wasm.Builtin(ctx, "t", &req)
	nj, _ := json.Marshal(nv)
	wj, _ := json.Marshal(wv)
	if string(nj) != string(wj) {
		t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
	}
	o := nv.Observation
	if o == nil {
		t.Fatalf("no observation: %s", nj)
	}
	if o.Outcome != tt.outcome || o.Code != tt.code {
		t.Fatalf("got %v %s, want %v %s\n%s", o.Outcome, o.Code, tt.outcome, tt.code, nj)
	}
	if got := o.Message(); got != tt.msg {
		t.Fatalf("message:\n got %q\nwant %q", got, tt.msg)
	}
	var effects []byte
	if len(nv.Effects) > 0 {
		effects, _ = json.Marshal(nv.Effects)
	}
	sameJSON(t, "effects", effects, tt.effects)
	sameJSON(t, "data", o.Data, tt.data)
}

func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if len(got) == 0 || want == "" {
		if len(got) != 0 || want != "" {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// TestManifest checks the manifest the host loaded from the wasm build.
func TestManifest(t *testing.T) {
	t.Parallel()
	m := wasm.Manifest()
	want := []string{control.FollowUp, control.Approval, control.Finish, control.Fail, control.Delegate}
	if len(m.Tools) != len(want) {
		t.Fatalf("tools = %d, want %d", len(m.Tools), len(want))
	}
	for i, name := range want {
		if m.Tools[i].Name != name || !json.Valid(m.Tools[i].InputSchema) {
			t.Fatalf("tool %d = %s", i, m.Tools[i].Name)
		}
	}
}
