package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestGuestProfile: a host with a profile times the guest's functions under
// the plugin's name, and writes them in pprof's encoding; Reset forgets them.
func TestGuestProfile(t *testing.T) {
	t.Parallel()
	prof := host.NewGuestProfile()
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t), Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	p := load(t, h, "good", host.Policy{})
	req, err := json.Marshal(before(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Invoke(context.Background(), "t1", req); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := prof.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	// The string table names the plugin, the export and the guest's
	// runtime.
	for _, want := range []string{"time", "nanoseconds", p.Ref(), "warden_handle", "runtime.mallocgc"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("profile lacks %q", want)
		}
	}
	prof.Reset()
	out.Reset()
	if _, err := prof.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("warden_handle")) {
		t.Errorf("Reset kept the samples")
	}
}
