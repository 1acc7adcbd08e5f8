package host_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/services"
)

// TestServices checks the host services as a guest sees them, against the
// same services called in-process.
func TestServices(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "services", host.Policy{})
	req := before(`{"title":"Q3","spaceId":7}`)
	v := p.Guard(context.Background(), "", req)
	if v.Observation == nil {
		t.Fatalf("%+v", v)
	}
	var got map[string]any
	if err := json.Unmarshal(v.Observation.Data, &got); err != nil {
		t.Fatal(err)
	}
	want, err := services.Call("digest", []byte(`{"args":{"spaceId":7,"title":"Q3"}}`), []byte("args"))
	if err != nil {
		t.Fatal(err)
	}
	if got["digest"] != string(want) || got["err"] != "" {
		t.Errorf("digest = %v (%v), want %s", got["digest"], got["err"], want)
	}
	if got["unknown"] != `guest: service "no.such.service": host service failed: services: "no.such.service": unknown host service` {
		t.Errorf("unknown service: %v", got["unknown"])
	}
	if got["title"] != "Q3" || got["has"] != true || got["keys"] != `["title","spaceId"]` {
		t.Errorf("query: %v", got)
	}
}
